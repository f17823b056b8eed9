package dev.blockpool.systemtest;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The rule for the tests that need root, over the test sources of every module: such a test is
 * named {@code *RealHostTest} and tagged {@code @NeedsRoot}, so that the unprivileged
 * {@code ./mvnw test} leaves it out and its name says why. A test that uses what only root can
 * have (a loop device, a mount, a FUSE or GlusterFS filesystem, the binary serving on a real
 * pool) is one of them.
 */
class RootTestNamesTest {

    private static final Path REPO = Path.of("..").toAbsolutePath().normalize();
    private static final String SUFFIX = "RealHostTest";
    /** The annotation on a top-level class: at the start of a line, as the formatter puts it. */
    private static final Pattern TAGGED = Pattern.compile("(?m)^@NeedsRoot\\b");
    /** The test helpers that need root, and the guard that skips a test without it. */
    private static final Pattern USES_ROOT =
            Pattern.compile("\\b(assumeRootWithLoopDevices|SilentFuseMount|ScratchFilesystems?|RealHost|GlusterVolume"
                    + "|DriverProcess)\\b");

    @Test
    void aTestNeedsRootExactlyWhenItIsNamedAndTaggedSo() throws IOException {
        List<Path> sources;
        try (Stream<Path> modules = Files.list(REPO)) {
            sources = modules.map(m -> m.resolve("src/test/java"))
                    .filter(Files::isDirectory)
                    .flatMap(RootTestNamesTest::javaFiles)
                    .toList();
        }
        String self = getClass().getSimpleName(); // names the helpers below, and needs no root
        assertThat(sources).anyMatch(p -> p.endsWith(self + ".java"));

        List<String> problems = new ArrayList<>();
        for (Path source : sources) {
            String name = source.getFileName().toString().replaceFirst("\\.java$", "");
            String text = Files.readString(source);
            boolean named = name.endsWith(SUFFIX);
            boolean tagged = TAGGED.matcher(text).find();
            Matcher uses = USES_ROOT.matcher(text);
            String where = REPO.relativize(source).toString();
            if (named && !tagged) {
                problems.add(where + ": named *" + SUFFIX + " without @NeedsRoot");
            } else if (tagged && !named) {
                problems.add(where + ": @NeedsRoot, but not named *" + SUFFIX);
            } else if (!named && name.endsWith("Test") && !name.equals(self) && uses.find()) {
                problems.add(where + ": uses " + uses.group() + ", which needs root, but is neither named *" + SUFFIX
                        + " nor tagged @NeedsRoot");
            }
        }
        assertThat(problems).isEmpty();
    }

    private static Stream<Path> javaFiles(Path root) {
        try (Stream<Path> walk = Files.walk(root)) {
            return walk.filter(p -> p.toString().endsWith(".java")).toList().stream();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
