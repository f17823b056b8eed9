package dev.blockpool.driver.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import csi.v1.ControllerGrpc;
import csi.v1.Csi.CreateVolumeRequest;
import csi.v1.Csi.CreateVolumeResponse;
import dev.blockpool.common.Endpoint;
import dev.blockpool.csi.UnixSocketChannels;
import dev.blockpool.driver.logging.CapturedLog;
import dev.blockpool.driver.logging.LogConfigurator.LogFormat;
import dev.blockpool.driver.logging.LogConfigurator.LogLevel;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.event.Level;

class CallLoggingInterceptorTest {

    private static final String CREATE = "csi.v1.Controller/CreateVolume";
    private static final String PROBE = "csi.v1.Identity/Probe";

    @TempDir
    Path dir;

    @Test
    void levelFollowsTheStatusCode() {
        Map<Status.Code, Level> expected = Map.ofEntries(
                Map.entry(Status.Code.OK, Level.INFO),
                Map.entry(Status.Code.ABORTED, Level.INFO),
                Map.entry(Status.Code.NOT_FOUND, Level.INFO),
                Map.entry(Status.Code.ALREADY_EXISTS, Level.INFO),
                Map.entry(Status.Code.INVALID_ARGUMENT, Level.WARN),
                Map.entry(Status.Code.FAILED_PRECONDITION, Level.WARN),
                Map.entry(Status.Code.OUT_OF_RANGE, Level.WARN),
                Map.entry(Status.Code.RESOURCE_EXHAUSTED, Level.WARN),
                Map.entry(Status.Code.INTERNAL, Level.ERROR),
                Map.entry(Status.Code.UNKNOWN, Level.ERROR),
                Map.entry(Status.Code.CANCELLED, Level.WARN),
                Map.entry(Status.Code.DEADLINE_EXCEEDED, Level.WARN),
                Map.entry(Status.Code.PERMISSION_DENIED, Level.ERROR),
                Map.entry(Status.Code.UNIMPLEMENTED, Level.ERROR),
                Map.entry(Status.Code.UNAVAILABLE, Level.ERROR),
                Map.entry(Status.Code.DATA_LOSS, Level.ERROR),
                Map.entry(Status.Code.UNAUTHENTICATED, Level.ERROR));
        assertThat(expected.keySet()).containsExactlyInAnyOrder(Status.Code.values());
        expected.forEach((code, level) -> assertThat(CallLoggingInterceptor.levelOf(CREATE, code))
                .as(code.name())
                .isEqualTo(level));
    }

    @Test
    void routineProbesAreDebugOnlyWhileTheySucceed() {
        assertThat(CallLoggingInterceptor.levelOf(PROBE, Status.Code.OK)).isEqualTo(Level.DEBUG);
        assertThat(CallLoggingInterceptor.levelOf(PROBE, Status.Code.INTERNAL)).isEqualTo(Level.ERROR);
        // kubelet asks for the stats of every mounted volume every minute: one line each would drown the log.
        assertThat(CallLoggingInterceptor.levelOf("csi.v1.Node/NodeGetVolumeStats", Status.Code.OK))
                .isEqualTo(Level.DEBUG);
        assertThat(CallLoggingInterceptor.levelOf("csi.v1.Node/NodeGetVolumeStats", Status.Code.NOT_FOUND))
                .isEqualTo(Level.INFO);
    }

    /** Through a real server: the level in the JSON line, and the request at debug with its secrets masked. */
    @Test
    void failedCallIsLoggedAtItsLevelWithSecretsMasked() throws Exception {
        List<JsonNode> lines = new ArrayList<>();
        try (CapturedLog log = new CapturedLog(LogFormat.JSON, LogLevel.DEBUG)) {
            callCreateVolume(CreateVolumeRequest.newBuilder()
                    .setName("pvc-1")
                    .putSecrets("password", "hunter2")
                    .build());
            for (String line : log.lines()) {
                lines.add(new ObjectMapper().readTree(line));
            }
        }
        JsonNode request = lines.stream()
                .filter(l -> l.get("message").asText().startsWith(CREATE + " request"))
                .findFirst()
                .orElseThrow();
        assertThat(request.get("level").asText()).isEqualTo("DEBUG");
        assertThat(request.get("message").asText())
                .contains(SecretRedactor.MASK)
                .doesNotContain("hunter2");
        JsonNode result = lines.stream()
                .filter(l -> l.get("logger").asText().equals("rpc")
                        && l.get("message").asText().contains("->"))
                .findFirst()
                .orElseThrow();
        assertThat(result.get("level").asText()).isEqualTo("WARN");
        assertThat(result.get("message").asText())
                .startsWith(CREATE + " [name=pvc-1] -> RESOURCE_EXHAUSTED: the pool is full");
    }

    private void callCreateVolume(CreateVolumeRequest request) throws Exception {
        var controller = new ControllerGrpc.ControllerImplBase() {
            @Override
            public void createVolume(CreateVolumeRequest ignored, StreamObserver<CreateVolumeResponse> response) {
                response.onError(Status.RESOURCE_EXHAUSTED
                        .withDescription("the pool is full")
                        .asRuntimeException());
            }
        };
        Path socket = dir.resolve("csi.sock");
        UnixSocketServer server = UnixSocketServer.start(
                Endpoint.parse(socket.toString()),
                List.of(controller.bindService()),
                List.of(new CallLoggingInterceptor()));
        EventLoopGroup clientLoop = UnixSocketChannels.clientLoop();
        ManagedChannel channel = UnixSocketChannels.channel(socket, clientLoop);
        try {
            assertThatThrownBy(() -> ControllerGrpc.newBlockingStub(channel).createVolume(request))
                    .hasMessageStartingWith("RESOURCE_EXHAUSTED");
        } finally {
            channel.shutdownNow();
            clientLoop.shutdownGracefully();
            server.stop(Duration.ofSeconds(1));
        }
    }
}
