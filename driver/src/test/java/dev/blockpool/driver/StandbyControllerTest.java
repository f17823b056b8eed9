package dev.blockpool.driver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import csi.v1.ControllerGrpc;
import csi.v1.Csi.CreateVolumeRequest;
import csi.v1.Csi.ProbeRequest;
import csi.v1.Csi.VolumeCapability;
import csi.v1.IdentityGrpc;
import dev.blockpool.common.Endpoint;
import dev.blockpool.pool.ReconcileSteps;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
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
 * A second controller on a pool another one acts on stands by: alive and ready for its
 * livenessprobe (which calls Probe, and would otherwise restart it over and over), refusing
 * changes with the acting controller's name, and taking over once that one has stopped.
 */
class StandbyControllerTest {

    @TempDir
    Path dir;

    private final EventLoopGroup clientLoop = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());

    @AfterEach
    void closeClient() {
        clientLoop.shutdownGracefully();
    }

    @Test
    void aStandbyControllerIsReadyRefusesChangesAndTakesOverWhenThePoolIsFree() throws Exception {
        Driver.Running acting = start("acting");
        Driver.Running standby = start("standby");
        ManagedChannel actingChannel = channel("acting");
        ManagedChannel standbyChannel = channel("standby");
        try {
            createVolume(actingChannel, "first"); // the first controller takes the pool

            assertThat(IdentityGrpc.newBlockingStub(standbyChannel)
                            .probe(ProbeRequest.getDefaultInstance())
                            .getReady()
                            .getValue())
                    .as("the standby's Probe, which its livenessprobe calls")
                    .isTrue();
            assertThatThrownBy(() -> createVolume(standbyChannel, "second"))
                    .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
                        assertThat(e.getStatus().getDescription())
                                .contains("another controller acts on the pool (pid "
                                        + ProcessHandle.current().pid());
                    });

            acting.stop(Duration.ofSeconds(10));

            assertThat(IdentityGrpc.newBlockingStub(standbyChannel)
                            .probe(ProbeRequest.getDefaultInstance())
                            .getReady()
                            .getValue())
                    .isTrue();
            assertThat(standby.pool().controllerClaim().problem())
                    .as("the standby took over")
                    .isEmpty();
            createVolume(standbyChannel, "second");
        } finally {
            actingChannel.shutdownNow();
            standbyChannel.shutdownNow();
            acting.stop(Duration.ofSeconds(10));
            standby.stop(Duration.ofSeconds(10));
        }
    }

    private Driver.Running start(String name) throws Exception {
        return new Driver(
                        new DriverConfig(
                                Endpoint.parse(dir.resolve(name + ".sock").toString()),
                                "node-1",
                                "blockpool.csi.dev",
                                dir.resolve("pool"),
                                Mode.CONTROLLER,
                                8),
                        "test",
                        // no reconcile within the test: it would take the pool in the background
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

    private static void createVolume(ManagedChannel channel, String name) {
        ControllerGrpc.newBlockingStub(channel)
                .createVolume(CreateVolumeRequest.newBuilder()
                        .setName(name)
                        .addVolumeCapabilities(VolumeCapability.newBuilder()
                                .setBlock(VolumeCapability.BlockVolume.getDefaultInstance())
                                .setAccessMode(VolumeCapability.AccessMode.newBuilder()
                                        .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER)))
                        .build());
    }
}
