package dev.blockpool.driver;

import static org.assertj.core.api.Assertions.assertThat;

import csi.v1.Csi.ProbeRequest;
import csi.v1.IdentityGrpc;
import dev.blockpool.common.Endpoint;
import dev.blockpool.pool.ReconcileSteps;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two node plugins started with one node ID on one pool: the first serves it, the second is not
 * ready and names the first (its pid and host), until the first stops.
 */
class DuplicateNodeIdTest {

    @TempDir
    Path dir;

    private final EventLoopGroup clientLoop = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());

    @AfterEach
    void closeClient() {
        clientLoop.shutdownGracefully();
    }

    @Test
    void aSecondPluginWithTheSameNodeIdIsNotReadyAndNamesTheHolder() throws Exception {
        Driver.Running first = start("first", "node-1");
        Driver.Running second = start("second", "node-1");
        Driver.Running other = start("other", "node-2");
        ManagedChannel firstChannel = channel("first");
        ManagedChannel secondChannel = channel("second");
        ManagedChannel otherChannel = channel("other");
        try {
            assertThat(ready(firstChannel)).isTrue();
            assertThat(ready(otherChannel))
                    .as("another node ID on the same pool")
                    .isTrue();
            assertThat(ready(secondChannel)).isFalse();
            assertThat(second.nodeClaim().orElseThrow().problem())
                    .hasValueSatisfying(problem -> assertThat(problem)
                            .startsWith("another node plugin serves node ID node-1 on this pool (pid "
                                    + ProcessHandle.current().pid() + " on host ")
                            .endsWith("; give each node plugin a node ID of its own"));

            first.stop(Duration.ofSeconds(10));

            assertThat(ready(secondChannel))
                    .as("the ID is free once its holder stopped")
                    .isTrue();
        } finally {
            firstChannel.shutdownNow();
            secondChannel.shutdownNow();
            otherChannel.shutdownNow();
            first.stop(Duration.ofSeconds(10));
            second.stop(Duration.ofSeconds(10));
            other.stop(Duration.ofSeconds(10));
        }
    }

    private static boolean ready(ManagedChannel channel) {
        return IdentityGrpc.newBlockingStub(channel)
                .probe(ProbeRequest.getDefaultInstance())
                .getReady()
                .getValue();
    }

    private Driver.Running start(String name, String nodeId) throws Exception {
        return new Driver(
                        new DriverConfig(
                                Endpoint.parse(dir.resolve(name + ".sock").toString()),
                                nodeId,
                                "blockpool.csi.dev",
                                dir.resolve("pool"),
                                Mode.NODE,
                                8),
                        "test",
                        new Driver.Background(Duration.ofDays(1), ReconcileSteps.ALL))
                .start();
    }

    private ManagedChannel channel(String name) {
        return NettyChannelBuilder.forAddress(
                        new DomainSocketAddress(dir.resolve(name + ".sock").toString()))
                .channelType(EpollDomainSocketChannel.class)
                .eventLoopGroup(clientLoop)
                .usePlaintext()
                .build();
    }
}
