package dev.blockpool.systemtest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launchers (bin/blockpool-csi, bin/blockpool-flexvolume) with the jar and the ahead-of-time
 * caches the build made: each workload starts with a cache of its own, and JVM options that do
 * not fit a cache cost it, never the start.
 */
class LauncherTest {

    private static final Path REPO = Path.of("..").toAbsolutePath().normalize();
    private static final Path JAR = REPO.resolve("driver/target/blockpool-csi.jar");
    private static final String FLEXVOLUME_INIT = "{\"status\":\"Success\",\"message\":\"blockpool FlexVolume driver: "
            + "mount and unmount through the node plugin\",\"capabilities\":{\"attach\":false}}\n";

    @TempDir
    Path dir;

    private record Run(int exit, String stdout, String stderr) {}

    @BeforeEach
    void theBuildPackagedTheDriver() {
        assumeTrue(Files.isRegularFile(JAR), "no " + JAR + ": the driver module is packaged before these tests run");
    }

    private Run run(String javaOptions, String... command) throws IOException, InterruptedException {
        Path out = dir.resolve("stdout");
        Path err = dir.resolve("stderr");
        ProcessBuilder builder =
                new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile());
        builder.environment().put("BLOCKPOOL_JAR", JAR.toString());
        builder.environment().put("BLOCKPOOL_JAVA_OPTS", javaOptions);
        builder.environment().put("CSI_ENDPOINT", "unix://" + dir.resolve("no-plugin.sock"));
        builder.environment().remove("BLOCKPOOL_AOT_CACHE");
        Process process = builder.start();
        assertThat(process.waitFor(60, TimeUnit.SECONDS))
                .as("%s finished", List.of(command))
                .isTrue();
        return new Run(
                process.exitValue(),
                Files.readString(out, StandardCharsets.UTF_8),
                Files.readString(err, StandardCharsets.UTF_8));
    }

    private static String driver() {
        return REPO.resolve("bin/blockpool-csi").toString();
    }

    private static String flexVolume() {
        return REPO.resolve("bin/blockpool-flexvolume").toString();
    }

    @Test
    void eachWorkloadStartsWithItsOwnCache() throws Exception {
        // AOTMode=on: a cache that is missing or does not fit the jar and the JVM is an error.
        assertThat(run("-XX:AOTMode=on", driver(), "--version").exit()).isZero();
        assertThat(run("-XX:AOTMode=on", flexVolume(), "init")).isEqualTo(new Run(0, FLEXVOLUME_INIT, ""));
    }

    @Test
    void theDriverCompilesWhatItsCachesTrainingCompiledAtOnceAndFlexVolumeDoesNot() throws Exception {
        // The JVM lists experimental options only when they are unlocked; the listing goes to stderr.
        String listing = "-XX:+UnlockExperimentalVMOptions -XX:+PrintFlagsFinal";
        assertThat(eagerCompilation(run(listing, driver(), "--version"))).isTrue();
        assertThat(eagerCompilation(run(listing, flexVolume(), "init"))).isFalse();
        // The operator's way back to compiling on the JIT's own counts.
        assertThat(eagerCompilation(run("-XX:-AOTCompileEagerly " + listing, driver(), "--version")))
                .isFalse();
    }

    private static boolean eagerCompilation(Run run) {
        assertThat(run.exit()).isZero();
        String line = run.stderr()
                .lines()
                .filter(l -> l.contains(" AOTCompileEagerly "))
                .findFirst()
                .orElseThrow(() -> new AssertionError("the JVM listed no AOTCompileEagerly:\n" + run.stderr()));
        return line.matches(".*=\\s*true\\s.*");
    }

    @Test
    void aHeapTooSmallForTheCachesObjectsStartsWithoutTheCacheAndSaysWhy() throws Exception {
        Run driver = run("-Xms2m -Xmx4m", driver(), "--version");
        assertThat(driver.exit()).isZero();
        assertThat(driver.stdout()).startsWith("blockpool-csi ");
        assertThat(driver.stderr()).contains("archived heap objects cannot be loaded", "starting without the cache");
        // kubelet reads stdout and stderr together as the answer: nothing else is said.
        assertThat(run("-Xms2m -Xmx4m", flexVolume(), "init")).isEqualTo(new Run(0, FLEXVOLUME_INIT, ""));
    }

    @Test
    void heapSizesThatFitKeepTheCache() throws Exception {
        assertThat(run("-Xms32m -Xmx128m -XX:AOTMode=on", driver(), "--version").stderr())
                .isEmpty();
    }

    @Test
    void optionsThatFailWithoutTheCacheFailWithTheJvmsOwnMessage() throws Exception {
        // Below bin/jvm.options' -Xms16m: no cache would make it start.
        Run driver = run("-Xmx8m", driver(), "--version");
        assertThat(driver.exit()).isNotZero();
        // The JVM says why it cannot start, on stderr, where the driver's log goes.
        assertThat(driver.stderr())
                .contains("Initial heap size set to a larger value than the maximum heap size")
                .doesNotContain("starting without the cache");
        assertThat(driver.stdout()).isEmpty();
    }
}
