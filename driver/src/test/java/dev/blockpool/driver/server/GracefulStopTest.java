package dev.blockpool.driver.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import csi.v1.Csi.ProbeRequest;
import csi.v1.Csi.ProbeResponse;
import csi.v1.IdentityGrpc;
import dev.blockpool.common.Endpoint;
import dev.blockpool.csi.StatusInterceptor;
import dev.blockpool.csi.UnixSocketChannels;
import dev.blockpool.identity.IdentityService;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** SIGTERM's path: a call in flight when the server stops still completes; the socket goes. */
class GracefulStopTest {

    @TempDir
    Path dir;

    @Test
    void inFlightCallCompletesAndSocketIsRemoved() throws Exception {
        CountDownLatch probing = new CountDownLatch(1);
        IdentityService slowIdentity = new IdentityService("blockpool.csi.dev", "test", List.of(), () -> {
            probing.countDown();
            sleep(Duration.ofMillis(800));
            return List.of();
        });
        Path socket = dir.resolve("csi.sock");
        UnixSocketServer server = UnixSocketServer.start(
                Endpoint.parse(socket.toString()),
                List.of(slowIdentity.bindService()),
                List.of(new StatusInterceptor(), new CallLoggingInterceptor()));
        EventLoopGroup clientLoop = UnixSocketChannels.clientLoop();
        ManagedChannel channel = UnixSocketChannels.channel(socket, clientLoop);
        try {
            var identity = IdentityGrpc.newBlockingStub(channel);
            CompletableFuture<ProbeResponse> inFlight =
                    CompletableFuture.supplyAsync(() -> identity.probe(ProbeRequest.getDefaultInstance()));
            probing.await();

            server.stop(Duration.ofSeconds(10));

            assertThat(inFlight.get().getReady().getValue()).isTrue();
            assertThat(socket).doesNotExist();
            assertThatThrownBy(() -> identity.probe(ProbeRequest.getDefaultInstance()))
                    .isInstanceOf(StatusRuntimeException.class);
        } finally {
            channel.shutdownNow();
            clientLoop.shutdownGracefully();
        }
    }

    private static void sleep(Duration duration) {
        try {
            Thread.sleep(duration);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
