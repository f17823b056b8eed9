package dev.blockpool.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.pool.Ids;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** blockpool-csi move: what its command line takes, and what it answers a mistake with. */
class MoveCommandTest {

    @TempDir
    Path dir;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();
    private final String volume = Ids.volumeIdFor("pvc-moving");

    @Test
    void takesTheRoundsOrTheLastStep() {
        MoveCommand.Request copy = MoveCommand.parse(List.of(required("--rounds", "3", "--until-below", "1Mi")));
        MoveCommand.Request last = MoveCommand.parse(List.of(required("--final")));

        assertThat(copy.from()).isEqualTo(new PeerAddress("node-a", "10.0.0.11", 9810));
        assertThat(copy.last()).isFalse();
        assertThat(copy.rounds()).isEqualTo(3);
        assertThat(copy.untilBelowBytes()).isEqualTo(1 << 20);
        assertThat(last.last()).isTrue();
        assertThat(last.rounds()).isEqualTo(MoveCommand.DEFAULT_ROUNDS);
    }

    @Test
    void aMistakeIsExitCode2WithTheReasonAndTheUsage() {
        assertThat(run("--volume", volume)).isEqualTo(2);
        assertThat(run(required("--final", "--rounds", "2"))).isEqualTo(2);
        assertThat(run(required("--from", "node-b=10.0.0.12:9810"))).isEqualTo(2);
        assertThat(run(required("--rounds", "0"))).isEqualTo(2);

        assertThat(err.toString(StandardCharsets.UTF_8))
                .contains("--pool-dir, --node-id, --peer-ca-dir, --from and --volume are required")
                .contains("--final takes neither --rounds nor --until-below")
                .contains("--from names this node, node-b")
                .contains("--rounds takes a number of at least 1, not 0")
                .contains("usage: blockpool-csi move");
    }

    @Test
    void aDirectoryThatIsNoPoolIsRefusedBeforeAnythingIsMadeInIt() {
        assertThat(run(required())).isEqualTo(1);

        assertThat(err.toString(StandardCharsets.UTF_8))
                .contains(dir + " is not a blockpool pool (it has no volumes/)");
        assertThat(dir.resolve("volumes")).doesNotExist();
    }

    /** The required arguments, then {@code extra} (a later --from replaces the first). */
    private String[] required(String... extra) {
        return Stream.concat(
                        Stream.of(
                                "--pool-dir",
                                dir.toString(),
                                "--node-id",
                                "node-b",
                                "--peer-ca-dir",
                                dir.resolve("ca").toString(),
                                "--from",
                                "node-a=10.0.0.11:9810",
                                "--volume",
                                volume),
                        Stream.of(extra))
                .toArray(String[]::new);
    }

    private int run(String... args) {
        return new MoveCommand(
                        new PrintStream(out, true, StandardCharsets.UTF_8),
                        new PrintStream(err, true, StandardCharsets.UTF_8))
                .execute(List.of(args));
    }
}
