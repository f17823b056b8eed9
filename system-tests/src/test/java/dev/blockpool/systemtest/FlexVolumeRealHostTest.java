package dev.blockpool.systemtest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import csi.v1.Csi;
import dev.blockpool.common.HostRequirements;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.host.mounts.MountInfo;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The FlexVolume executable (bin/blockpool-flexvolume, running the packaged binary) driven the way
 * kubelet drives it: the same argv, the options JSON kubelet builds (the PV's options plus its own
 * {@code kubernetes.io/*} keys, a secret among them), stdout and stderr read together as one
 * answer. Behind it, the real driver in mode "all" on a pool in a temporary directory, real loop
 * devices and mounts. Every test ends with nothing of its own left mounted or attached.
 */
@NeedsRoot
class FlexVolumeRealHostTest {

    private static final Path REPO = Path.of("..").toAbsolutePath().normalize();
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String DRIVER = "blockpool.csi.dev~blockpool";
    private static final String SECRET = "c2VjcmV0LXZhbHVl";

    private Path dir;
    private DriverProcess driver;
    private HostInspector host;

    @BeforeEach
    void setUp() throws Exception {
        HostRequirements.assumeRootWithLoopDevices();
        HostRequirements.assumeCommand("mkfs.ext4");
        dir = Files.createTempDirectory("blockpool-flex-").toRealPath();
        driver = new DriverProcess(dir).start();
        host = new HostInspector(dir, driver.pool());
    }

    @AfterEach
    void tearDown() throws Exception {
        if (driver != null) {
            driver.close();
        }
        if (dir != null) {
            List<MountInfo> mounts = host.mountsUnder();
            List<String> loops =
                    host.poolLoops().stream().map(l -> l.device().toString()).toList();
            List<String> cleaned = host.cleanUp();
            // Only after the clean-up: a failed test must not leave its mounts behind either.
            assertThat(mounts).as("mounts left under " + dir).isEmpty();
            assertThat(loops).as("loop devices left on the pool").isEmpty();
            assertThat(cleaned).isEmpty();
        }
    }

    /** One call as kubelet makes it; the answer is the whole of stdout and stderr together. */
    private record Answer(int exit, String output, JsonNode json) {
        String status() {
            return json.get("status").asText();
        }

        String message() {
            return json.path("message").asText();
        }
    }

    private Answer flex(Map<String, String> env, String... args) throws IOException, InterruptedException {
        List<String> command =
                new ArrayList<>(List.of(REPO.resolve("bin/blockpool-flexvolume").toString()));
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment()
                .put(
                        "BLOCKPOOL_JAR",
                        REPO.resolve("driver/target/blockpool-csi.jar").toString());
        builder.environment().putAll(env);
        Process process = builder.start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        int exit = process.waitFor();
        assertThat(output).as("one JSON line, nothing else").endsWith("\n").doesNotContain(SECRET);
        assertThat(output.strip()).doesNotContain("\n");
        JsonNode json = JSON.readTree(output);
        String status = json.get("status").asText();
        assertThat(exit).as(output).isEqualTo(status.equals("Failure") ? 1 : 0);
        return new Answer(exit, output, json);
    }

    private Answer flex(String... args) throws IOException, InterruptedException {
        return flex(Map.of("CSI_ENDPOINT", "unix://" + driver.socket()), args);
    }

    /** kubelet's options for a pod using the PV: NewOptionsForDriver and the mounter's extra options. */
    private static String kubeletOptions(
            String volumeId, String fsType, boolean readOnly, Map<String, String> pvOptions) throws IOException {
        Map<String, String> options = new LinkedHashMap<>();
        options.put("kubernetes.io/fsType", fsType);
        options.put("kubernetes.io/readwrite", readOnly ? "ro" : "rw");
        options.put("kubernetes.io/pvOrVolumeName", "flex-pv");
        options.put("kubernetes.io/pod.name", "web-0");
        options.put("kubernetes.io/pod.namespace", "default");
        options.put("kubernetes.io/pod.uid", UUID.randomUUID().toString());
        options.put("kubernetes.io/serviceAccount.name", "default");
        options.put("kubernetes.io/mounterArgs.FsGroup", "2000");
        options.put("kubernetes.io/secret/token", SECRET);
        if (volumeId != null) {
            options.put("volumeID", volumeId);
        }
        options.putAll(pvOptions);
        return JSON.writeValueAsString(options);
    }

    private static String kubeletOptions(String volumeId) throws IOException {
        return kubeletOptions(volumeId, "ext4", false, Map.of());
    }

    /** A pod's volume directory, made as kubelet makes it before mount. */
    private Path podDir(String pod) throws IOException {
        Path target = dir.resolve("kubelet/pods")
                .resolve(pod)
                .resolve("volumes")
                .resolve(DRIVER)
                .resolve("flex-pv");
        Files.createDirectories(target);
        return target;
    }

    private String createVolume(String name) {
        return driver.controller()
                .createVolume(Csi.CreateVolumeRequest.newBuilder()
                        .setName(name)
                        .setCapacityRange(Csi.CapacityRange.newBuilder().setRequiredBytes(32L << 20))
                        .addVolumeCapabilities(Csi.VolumeCapability.newBuilder()
                                .setMount(Csi.VolumeCapability.MountVolume.newBuilder()
                                        .setFsType("ext4"))
                                .setAccessMode(Csi.VolumeCapability.AccessMode.newBuilder()
                                        .setMode(Csi.VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER)))
                        .build())
                .getVolume()
                .getVolumeId();
    }

    private Path staging(String volumeId) {
        return dir.resolve("flexvolume/staging").resolve(volumeId);
    }

    @Test
    void initSaysAttachIsNotOffered() throws Exception {
        Answer init = flex("init");

        assertThat(init.status()).isEqualTo("Success");
        assertThat(init.json().get("capabilities").get("attach").asBoolean(true))
                .isFalse();
    }

    @Test
    void twoPodsMountTheVolumeAndTheLastUnmountUnstagesIt() throws Exception {
        String volume = createVolume("flex-shared");
        Path first = podDir("pod-a");
        Path second = podDir("pod-b");

        assertThat(flex("mount", first.toString(), kubeletOptions(volume)).status())
                .isEqualTo("Success");
        Files.writeString(first.resolve("data"), "written by pod a");
        assertThat(flex("mount", second.toString(), kubeletOptions(volume)).status())
                .isEqualTo("Success");
        assertThat(Files.readString(second.resolve("data"))).isEqualTo("written by pod a");
        assertThat(host.mountsAt(staging(volume))).hasSize(1);

        Answer unmountFirst = flex("unmount", first.toString());
        assertThat(unmountFirst.status()).as(unmountFirst.output()).isEqualTo("Success");
        assertThat(host.mountsAt(first)).isEmpty();
        assertThat(host.mountsAt(staging(volume))).as("still used by pod b").hasSize(1);
        assertThat(Files.readString(second.resolve("data"))).isEqualTo("written by pod a");

        assertThat(flex("unmount", second.toString()).status()).isEqualTo("Success");
        assertThat(host.mountsUnder()).isEmpty();
        assertThat(host.loopsOf(volume)).isEmpty();
        assertThat(staging(volume)).doesNotExist();

        // kubelet retries an unmount it did not see answered: nothing is left to do.
        Files.createDirectories(second);
        Answer again = flex("unmount", second.toString());
        assertThat(again.status()).isEqualTo("Success");
        assertThat(again.message()).contains("nothing");

        // The data is on the volume, not in a directory: a new mount sees it.
        Path third = podDir("pod-c");
        assertThat(flex("mount", third.toString(), kubeletOptions(volume)).status())
                .isEqualTo("Success");
        assertThat(Files.readString(third.resolve("data"))).isEqualTo("written by pod a");
        assertThat(flex("unmount", third.toString()).status()).isEqualTo("Success");
    }

    @Test
    void aReadOnlyPvIsMountedReadOnly() throws Exception {
        String volume = createVolume("flex-ro");
        Path target = podDir("pod-ro");

        Answer mount = flex("mount", target.toString(), kubeletOptions(volume, "", true, Map.of()));

        assertThat(mount.status()).as(mount.output()).isEqualTo("Success");
        assertThat(host.mountsAt(target))
                .singleElement()
                .satisfies(m -> assertThat(m.readOnly()).isTrue());
        assertThatThrownBy(() -> Files.writeString(target.resolve("data"), "x")).isInstanceOf(IOException.class);
        assertThat(flex("unmount", target.toString()).status()).isEqualTo("Success");
        assertThat(host.loopsOf(volume)).isEmpty();
    }

    @Test
    void anUnmountCutShortBeforeItsUnstageIsFinishedByKubeletsRetry() throws Exception {
        String volume = createVolume("flex-cut");
        Path target = podDir("pod-cut");
        assertThat(flex("mount", target.toString(), kubeletOptions(volume)).status())
                .isEqualTo("Success");
        // The unpublish of an unmount that ended before its unstage.
        driver.node()
                .nodeUnpublishVolume(Csi.NodeUnpublishVolumeRequest.newBuilder()
                        .setVolumeId(volume)
                        .setTargetPath(target.toString())
                        .build());
        Files.createDirectories(target);

        assertThat(flex("unmount", target.toString()).status()).isEqualTo("Success");

        assertThat(host.mountsUnder()).isEmpty();
        assertThat(host.loopsOf(volume)).isEmpty();
        assertThat(staging(volume)).doesNotExist();
    }

    @Test
    void mistakesAreFailuresThatSayWhatIsWrongAndLeaveNothing() throws Exception {
        String volume = createVolume("flex-mistakes");
        Path target = podDir("pod-x");

        Answer unknownVolume = flex("mount", target.toString(), kubeletOptions("vol-" + "0".repeat(32)));
        assertThat(unknownVolume.status()).isEqualTo("Failure");
        assertThat(unknownVolume.message()).contains("does not exist", "NOT_FOUND");

        Answer unknownOption =
                flex("mount", target.toString(), kubeletOptions(volume, "ext4", false, Map.of("size", "1Gi")));
        assertThat(unknownOption.status()).isEqualTo("Failure");
        assertThat(unknownOption.message()).contains("unknown option \"size\"");

        Answer noVolume = flex("mount", target.toString(), kubeletOptions(null));
        assertThat(noVolume.message()).contains("no volumeID");

        Answer otherFilesystem = flex("mount", target.toString(), kubeletOptions(volume, "xfs", false, Map.of()));
        assertThat(otherFilesystem.status()).isEqualTo("Failure");
        assertThat(otherFilesystem.message()).contains("created for ext4");

        Answer badJson = flex("mount", target.toString(), "{\"volumeID\": ");
        assertThat(badJson.status()).isEqualTo("Failure");
        assertThat(badJson.message()).contains("not valid JSON");

        Answer wrongArguments = flex("mount", target.toString());
        assertThat(wrongArguments.status()).isEqualTo("Failure");
        assertThat(wrongArguments.message()).contains("mount takes 2 arguments");

        assertThat(flex().status()).isEqualTo("Failure");
        assertThat(flex("attach", kubeletOptions(volume), "node-1").status()).isEqualTo("Not supported");
        assertThat(flex("getvolumename", kubeletOptions(volume)).status()).isEqualTo("Not supported");

        assertThat(host.mountsUnder()).isEmpty();
        assertThat(host.poolLoops()).isEmpty();
        assertThat(dir.resolve("flexvolume/staging")).isEmptyDirectory();
        assertThat(dir.resolve("kubelet/pods/pod-x/volumes").resolve(DRIVER).resolve("flex-pv"))
                .isEmptyDirectory();
    }

    @Test
    void aNodePluginThatIsDownIsAFailureUntilItIsBack() throws Exception {
        String volume = createVolume("flex-down");
        Path target = podDir("pod-down");
        assertThat(flex("mount", target.toString(), kubeletOptions(volume)).status())
                .isEqualTo("Success");

        driver.close();
        Answer unmount = flex("unmount", target.toString());
        assertThat(unmount.status()).isEqualTo("Failure");
        assertThat(unmount.message())
                .contains("does not answer", driver.socket().toString());
        Answer mount = flex("mount", podDir("pod-later").toString(), kubeletOptions(volume));
        assertThat(mount.status()).isEqualTo("Failure");
        assertThat(mount.message()).contains(driver.socket().toString());
        assertThat(host.mountsAt(target)).as("nothing undone half-way").hasSize(1);

        driver.start();
        assertThat(flex("unmount", target.toString()).status()).isEqualTo("Success");
        assertThat(host.mountsUnder()).isEmpty();
        assertThat(host.loopsOf(volume)).isEmpty();

        Answer elsewhere = flex(
                Map.of("CSI_ENDPOINT", "unix://" + dir.resolve("nowhere/csi.sock")),
                "mount",
                target.toString(),
                kubeletOptions(volume));
        assertThat(elsewhere.message()).contains("no blockpool node plugin socket");
        assertThat(dir.resolve("nowhere")).doesNotExist();
    }
}
