package dev.blockpool.driver.server;

import static org.assertj.core.api.Assertions.assertThat;

import csi.v1.Csi.GetPluginInfoRequest;
import csi.v1.Csi.GetPluginInfoResponse;
import csi.v1.Csi.ProbeRequest;
import csi.v1.Csi.ProbeResponse;
import csi.v1.IdentityGrpc;
import dev.blockpool.common.Endpoint;
import dev.blockpool.csi.UnixSocketChannels;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** A call that answers from memory runs where it arrives; one that waits has a thread of its own. */
class CallPlacementTest {

    @TempDir
    Path dir;

    /** Records the thread each call ran on; Probe waits until it is let go. */
    private static final class Recording extends IdentityGrpc.IdentityImplBase {
        final CountDownLatch probing = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        volatile Thread probeThread;
        volatile Thread infoThread;

        @Override
        public void probe(ProbeRequest request, StreamObserver<ProbeResponse> response) {
            probeThread = Thread.currentThread();
            probing.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            response.onNext(ProbeResponse.getDefaultInstance());
            response.onCompleted();
        }

        @Override
        public void getPluginInfo(GetPluginInfoRequest request, StreamObserver<GetPluginInfoResponse> response) {
            infoThread = Thread.currentThread();
            response.onNext(GetPluginInfoResponse.newBuilder()
                    .setName("blockpool.csi.dev")
                    .build());
            response.onCompleted();
        }
    }

    @Test
    @Timeout(30)
    void aWaitingCallHoldsUpNoCallAnsweredInPlaceOnTheSameConnection() throws Exception {
        Recording identity = new Recording();
        Path socket = dir.resolve("csi.sock");
        UnixSocketServer server =
                UnixSocketServer.start(Endpoint.parse(socket.toString()), List.of(identity.bindService()), List.of());
        EventLoopGroup clientLoop = UnixSocketChannels.clientLoop();
        ManagedChannel channel = UnixSocketChannels.channel(socket, clientLoop);
        try {
            var stub = IdentityGrpc.newBlockingStub(channel);
            CompletableFuture<ProbeResponse> waiting =
                    CompletableFuture.supplyAsync(() -> stub.probe(ProbeRequest.getDefaultInstance()));
            assertThat(identity.probing.await(10, TimeUnit.SECONDS)).isTrue();

            assertThat(stub.withDeadlineAfter(5, TimeUnit.SECONDS)
                            .getPluginInfo(GetPluginInfoRequest.getDefaultInstance())
                            .getName())
                    .isEqualTo("blockpool.csi.dev");
            assertThat(waiting).isNotDone();
            identity.release.countDown();
            waiting.get(10, TimeUnit.SECONDS);

            assertThat(identity.probeThread.getName())
                    .as("Probe on a thread of its own")
                    .startsWith("call-");
            assertThat(identity.infoThread.getName())
                    .as("GetPluginInfo in place")
                    .doesNotStartWith("call-");
            assertThat(CallPlacement.IN_PLACE)
                    .contains(IdentityGrpc.getGetPluginInfoMethod().getFullMethodName())
                    .doesNotContain(IdentityGrpc.getProbeMethod().getFullMethodName());
        } finally {
            identity.release.countDown();
            channel.shutdownNow();
            clientLoop.shutdownGracefully();
            server.stop(Duration.ofSeconds(5));
        }
    }
}
