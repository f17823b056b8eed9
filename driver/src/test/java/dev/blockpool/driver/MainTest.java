package dev.blockpool.driver;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.blockpool.driver.logging.LogConfigurator;
import dev.blockpool.driver.logging.LogConfigurator.LogFormat;
import dev.blockpool.driver.logging.LogConfigurator.LogLevel;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Bad command-line input exits non-zero with one line that says what is wrong; so does a failed start. */
class MainTest {

    @TempDir
    Path dir;

    private final ByteArrayOutputStream err = new ByteArrayOutputStream();
    private PrintStream originalErr;

    @BeforeEach
    void captureStderr() {
        originalErr = System.err;
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    @AfterEach
    void restoreStderr() {
        System.setErr(originalErr);
    }

    private String stderr() {
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void unknownFlagIsOneLine() {
        assertThat(Main.run("--endpoint", "/tmp/x.sock", "--frobnicate")).isEqualTo(2);
        assertThat(stderr())
                .startsWith("blockpool-csi: Unknown option: '--frobnicate'")
                .hasLineCount(1);
    }

    @Test
    void badEndpointSchemeIsOneLine() {
        assertThat(Main.run("--endpoint", "tcp://127.0.0.1:9000")).isEqualTo(2);
        assertThat(stderr())
                .contains("is not a Unix socket")
                .doesNotContain("Exception")
                .hasLineCount(1);
    }

    @Test
    void badModeIsOneLine() {
        assertThat(Main.run(
                        "--endpoint",
                        dir.resolve("csi.sock").toString(),
                        "--pool-dir",
                        dir.toString(),
                        "--mode",
                        "everything"))
                .isEqualTo(2);
        assertThat(stderr())
                .startsWith("blockpool-csi: Invalid value for option '--mode'")
                .contains("everything")
                .hasLineCount(1);
    }

    @Test
    void aNodeLocalPoolIsServedByOneProcessOnly() {
        for (String mode : new String[] {"controller", "node"}) {
            assertThat(Main.run(
                            "--endpoint",
                            dir.resolve("csi.sock").toString(),
                            "--pool-dir",
                            dir.resolve("pool").toString(),
                            "--mode",
                            mode))
                    .isEqualTo(1);
        }
        assertThat(stderr())
                .contains("--mode controller cannot serve a node-local pool", "--mode node cannot serve")
                .contains("with --mode all", "--pool-scope shared")
                .hasLineCount(2);
        assertThat(dir.resolve("csi.sock")).doesNotExist();
    }

    @Test
    void badLogFormatIsOneLine() {
        assertThat(Main.run(
                        "--endpoint",
                        dir.resolve("csi.sock").toString(),
                        "--pool-dir",
                        dir.toString(),
                        "--log-format",
                        "xml"))
                .isEqualTo(2);
        assertThat(stderr())
                .startsWith("blockpool-csi: Invalid value for option '--log-format'")
                .hasLineCount(1);
    }

    @Test
    void startFailureIsLoggedInTheChosenFormat() throws Exception {
        Path notASocket = Files.writeString(dir.resolve("csi.sock"), "data");
        try {
            assertThat(Main.run(
                            "--endpoint",
                            notASocket.toString(),
                            "--pool-dir",
                            dir.resolve("pool").toString(),
                            "--mode",
                            "controller",
                            "--pool-scope",
                            "shared",
                            "--node-id",
                            "n1",
                            "--log-format",
                            "json"))
                    .isEqualTo(1);
        } finally {
            LogConfigurator.apply(LogFormat.TEXT, LogLevel.INFO);
        }
        List<JsonNode> lines = new ArrayList<>();
        for (String line : stderr().lines().toList()) {
            lines.add(new ObjectMapper().readTree(line));
        }
        assertThat(lines.getLast().get("level").asText()).isEqualTo("ERROR");
        assertThat(lines.getLast().get("message").asText())
                .startsWith("cannot start: ")
                .endsWith("is not a socket; refusing to replace it");
    }

    @Test
    void versionNamesTheProjectAndCsiSpecVersionsOfTheBuild() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        PrintStream originalOut = System.out;
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            assertThat(Main.run("--version")).isZero();
        } finally {
            System.setOut(originalOut);
        }
        // The build passes the root pom's csi.spec.version to the tests, the same property it filters into the jar.
        String specVersion = System.getProperty("csi.spec.version");
        assertThat(specVersion).startsWith("v");
        assertThat(out.toString(StandardCharsets.UTF_8))
                .startsWith("blockpool-csi " + Main.version() + " (CSI spec " + specVersion + ", Java ");
    }
}
