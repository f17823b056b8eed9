package dev.blockpool.driver.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import csi.v1.Csi.ProbeRequest;
import csi.v1.IdentityGrpc;
import dev.blockpool.common.Endpoint;
import dev.blockpool.csi.RawRequests;
import dev.blockpool.csi.StatusInterceptor;
import dev.blockpool.csi.UnixSocketChannels;
import dev.blockpool.identity.IdentityService;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.stub.ClientCalls;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Bytes that are not a request of the method: INVALID_ARGUMENT, and the server serves on. */
class MalformedRequestGuardTest {

    @TempDir
    Path dir;

    /** Sends raw bytes as the request of csi.v1.Identity/Probe. */
    private static final MethodDescriptor<byte[], byte[]> RAW_PROBE =
            RawRequests.method(IdentityGrpc.getProbeMethod().getFullMethodName());

    @Test
    void bytesThatDoNotParseAreInvalidArgumentAndTheServerServesOn() throws Exception {
        Path socket = dir.resolve("csi.sock");
        IdentityService identity = new IdentityService("blockpool.csi.dev", "test", List.of(), List::of);
        UnixSocketServer server = UnixSocketServer.start(
                Endpoint.parse(socket.toString()),
                List.of(identity.bindService()),
                List.of(new StatusInterceptor(), new CallLoggingInterceptor()));
        EventLoopGroup loop = UnixSocketChannels.clientLoop();
        ManagedChannel channel = UnixSocketChannels.channel(socket, loop);
        try {
            for (byte[] garbage : List.of(
                    new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff},
                    new byte[] {0x0a, 0x7f, 0x01},
                    "GET / HTTP/1.1\r\n\r\n".getBytes())) {
                StatusRuntimeException e = catchThrowableOfType(
                        StatusRuntimeException.class,
                        () -> ClientCalls.blockingUnaryCall(channel, RAW_PROBE, CallOptions.DEFAULT, garbage));
                assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
                assertThat(e.getStatus().getDescription())
                        .startsWith("the request is not a valid csi.v1.Identity/Probe message");
            }
            assertThat(IdentityGrpc.newBlockingStub(channel)
                            .probe(ProbeRequest.getDefaultInstance())
                            .getReady()
                            .getValue())
                    .isTrue();
        } finally {
            channel.shutdownNow();
            loop.shutdownGracefully();
            server.stop(Duration.ofSeconds(5));
        }
    }
}
