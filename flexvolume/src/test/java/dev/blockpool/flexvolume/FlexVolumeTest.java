package dev.blockpool.flexvolume;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The answers that need no node plugin: one JSON line each, with the exit status kubelet expects. */
class FlexVolumeTest {

    @TempDir
    Path dir;

    private record Call(int exit, String output) {}

    private Call run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int exit = FlexVolume.run(
                List.of(args),
                Map.of("CSI_ENDPOINT", "unix://" + dir.resolve("csi.sock")),
                new PrintStream(out, true, StandardCharsets.UTF_8));
        return new Call(exit, out.toString(StandardCharsets.UTF_8));
    }

    @Test
    void initReportsThatAttachIsNotOffered() {
        assertThat(run("init"))
                .isEqualTo(new Call(
                        0,
                        "{\"status\":\"Success\",\"message\":\"blockpool FlexVolume driver: "
                                + "mount and unmount through the node plugin\","
                                + "\"capabilities\":{\"attach\":false}}\n"));
    }

    @Test
    void theAttachFamilyAndUnknownOperationsAreNotSupported() {
        for (String operation : List.of(
                "attach",
                "detach",
                "waitforattach",
                "isattached",
                "mountdevice",
                "unmountdevice",
                "getvolumename",
                "expandvolume",
                "expandfs",
                "somethingnew")) {
            assertThat(run(operation, "{}", "node-1"))
                    .isEqualTo(new Call(
                            0,
                            "{\"status\":\"Not supported\",\"message\":\"" + operation
                                    + " is not supported by blockpool's FlexVolume driver\"}\n"));
        }
    }

    @Test
    void aWrongArgumentCountIsAFailure() {
        assertThat(run())
                .satisfies(c -> assertThat(c.exit()).isEqualTo(1))
                .satisfies(
                        c -> assertThat(c.output()).startsWith("{\"status\":\"Failure\",\"message\":\"no operation"));
        assertThat(run("init", "extra").output()).contains("init takes 0 arguments (none), not 1");
        assertThat(run("mount", "/pods/x").output()).contains("mount takes 2 arguments");
        assertThat(run("unmount").exit()).isEqualTo(1);
    }

    @Test
    void aRelativeMountDirIsRefused() {
        assertThat(run("unmount", "pods/x").output()).contains("mount dir \\\"pods/x\\\" is not an absolute path");
    }

    @Test
    void aMountWithoutANodePluginSaysWhereItLooked() {
        Call call =
                run("mount", dir.resolve("pod").toString(), "{\"volumeID\":\"vol-0123456789abcdef0123456789abcdef\"}");
        assertThat(call.exit()).isEqualTo(1);
        assertThat(call.output()).contains("no blockpool node plugin socket at " + dir.resolve("csi.sock"));
    }

    @Test
    void theSocketIsCsiEndpointElseTheNodeDaemonSets() {
        assertThat(FlexVolume.socket(Map.of())).isEqualTo(FlexVolume.DEFAULT_SOCKET);
        assertThat(FlexVolume.socket(Map.of("CSI_ENDPOINT", "unix:///csi/csi.sock")))
                .isEqualTo(Path.of("/csi/csi.sock"));
        assertThat(run("init").exit()).isZero();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int exit = FlexVolume.run(
                List.of("init"),
                Map.of("CSI_ENDPOINT", "tcp://10.0.0.1:9000"),
                new PrintStream(out, true, StandardCharsets.UTF_8));
        assertThat(exit).isEqualTo(1);
        assertThat(out.toString(StandardCharsets.UTF_8))
                .contains("CSI_ENDPOINT: endpoint tcp://10.0.0.1:9000 is not a " + "Unix socket");
    }
}
