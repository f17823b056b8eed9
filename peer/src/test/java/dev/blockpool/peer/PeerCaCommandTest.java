package dev.blockpool.peer;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** blockpool-csi peer-ca: making the CA and each step of its rotation. */
class PeerCaCommandTest {

    @TempDir
    Path dir;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    @Test
    void makesACaWhoseKeyOnlyItsOwnerReads() throws Exception {
        assertThat(run("--out", dir.toString())).isZero();

        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve(ClusterCa.KEY))))
                .isEqualTo("rw-------");
        ClusterCa ca = ClusterCa.read(dir);
        assertThat(ca.trusted()).containsExactly(ca.signer());
        assertThat(ca.signer().getBasicConstraints()).isGreaterThanOrEqualTo(0);
        assertThat(out.toString(StandardCharsets.UTF_8)).doesNotContain("PRIVATE KEY");
    }

    @Test
    void refusesToOverwriteACa() throws Exception {
        assertThat(run("--out", dir.toString())).isZero();
        byte[] key = Files.readAllBytes(dir.resolve(ClusterCa.KEY));

        assertThat(run("--out", dir.toString())).isEqualTo(1);

        assertThat(Files.readAllBytes(dir.resolve(ClusterCa.KEY))).isEqualTo(key);
        assertThat(err.toString(StandardCharsets.UTF_8))
                .contains(dir.resolve(ClusterCa.BUNDLE).toString())
                .contains("a CA is already there")
                .doesNotContain("Exception");
    }

    @Test
    void rotatesInThreeSteps() throws Exception {
        assertThat(run("--out", dir.toString())).isZero();
        ClusterCa first = ClusterCa.read(dir);

        assertThat(run("--out", dir.toString(), "--rotate")).isZero();
        ClusterCa rotating = ClusterCa.read(dir);
        assertThat(rotating.trusted()).hasSize(2).startsWith(first.signer());
        assertThat(rotating.signer()).isEqualTo(first.signer()); // nodes still sign with the old key
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve(ClusterCa.NEXT_KEY))))
                .isEqualTo("rw-------");

        assertThat(run("--out", dir.toString(), "--switch-key")).isZero();
        ClusterCa switched = ClusterCa.read(dir);
        assertThat(switched.signer()).isEqualTo(rotating.trusted().get(1));
        assertThat(switched.trusted()).hasSize(2);
        assertThat(dir.resolve(ClusterCa.NEXT_KEY)).doesNotExist();

        assertThat(run("--out", dir.toString(), "--retire-old")).isZero();
        assertThat(ClusterCa.read(dir).trusted()).containsExactly(switched.signer());
    }

    @Test
    void aMistakeOnTheCommandLineIsSaidWithTheUsage() {
        assertThat(run("--rotate")).isEqualTo(2);
        assertThat(err.toString(StandardCharsets.UTF_8))
                .contains("--out DIR is required")
                .contains("usage:");
    }

    private int run(String... args) {
        return new PeerCaCommand(
                        new PrintStream(out, true, StandardCharsets.UTF_8),
                        new PrintStream(err, true, StandardCharsets.UTF_8))
                .execute(List.of(args));
    }
}
