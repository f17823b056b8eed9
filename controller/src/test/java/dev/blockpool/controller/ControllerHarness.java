package dev.blockpool.controller;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import csi.v1.ControllerGrpc;
import csi.v1.Csi.CapacityRange;
import csi.v1.Csi.CreateVolumeRequest;
import csi.v1.Csi.VolumeCapability;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import csi.v1.Csi.VolumeContentSource;
import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.OperationLocks;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.common.StatusInterceptor;
import dev.blockpool.pool.Pool;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * A {@link ControllerService} on a pool directory, served in-process through the same status
 * interceptor as the driver, so tests see the gRPC codes a CO sees. {@link #restart()} drops
 * everything held in memory (pool, locks, server) and opens the same directory again, as a
 * restarted driver would.
 */
final class ControllerHarness implements AutoCloseable {

    static final long MIB = 1 << 20;

    private final Path poolDir;
    private final CommandRunner commands;
    private Pool pool;
    private Server server;
    private ManagedChannel channel;
    private ControllerGrpc.ControllerBlockingStub stub;

    ControllerHarness(Path poolDir) {
        this(poolDir, new ProcessCommandRunner());
    }

    ControllerHarness(Path poolDir, CommandRunner commands) {
        this.poolDir = poolDir;
        this.commands = commands;
        start();
    }

    private void start() {
        // settle time zero: at start-up everything unfinished is treated as left by a crash
        pool = Pool.open(poolDir, commands, Clock.systemUTC(), Duration.ZERO);
        String name = InProcessServerBuilder.generateName();
        try {
            server = InProcessServerBuilder.forName(name)
                    .addService(ServerInterceptors.intercept(new ControllerService(pool, new OperationLocks()),
                            new StatusInterceptor()))
                    .build().start();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        channel = InProcessChannelBuilder.forName(name).build();
        stub = ControllerGrpc.newBlockingStub(channel);
    }

    void restart() {
        close();
        start();
    }

    ControllerGrpc.ControllerBlockingStub stub() {
        return stub;
    }

    Pool pool() {
        return pool;
    }

    Path poolDir() {
        return poolDir;
    }

    @Override
    public void close() {
        channel.shutdownNow();
        server.shutdownNow();
        try {
            server.awaitTermination(10, TimeUnit.SECONDS);
            channel.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ---- request builders and assertions shared by the tests ----

    static VolumeCapability mount(Mode mode) {
        return VolumeCapability.newBuilder()
                .setMount(VolumeCapability.MountVolume.getDefaultInstance())
                .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(mode)).build();
    }

    static VolumeCapability block(Mode mode) {
        return VolumeCapability.newBuilder()
                .setBlock(VolumeCapability.BlockVolume.getDefaultInstance())
                .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(mode)).build();
    }

    static VolumeCapability singleWriter() {
        return mount(Mode.SINGLE_NODE_WRITER);
    }

    static CreateVolumeRequest.Builder createRequest(String name, long bytes) {
        return CreateVolumeRequest.newBuilder()
                .setName(name)
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(bytes))
                .addVolumeCapabilities(singleWriter());
    }

    static VolumeContentSource fromSnapshot(String snapshotId) {
        return VolumeContentSource.newBuilder()
                .setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(snapshotId)).build();
    }

    static VolumeContentSource fromVolume(String volumeId) {
        return VolumeContentSource.newBuilder()
                .setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(volumeId)).build();
    }

    /** The status code the call ends with: OK when it returns, the error's code when it throws. */
    static Status.Code codeOf(Runnable call) {
        try {
            call.run();
            return Status.Code.OK;
        } catch (StatusRuntimeException e) {
            return e.getStatus().getCode();
        }
    }

    static StatusRuntimeException failure(Runnable call, Status.Code expected) {
        StatusRuntimeException e = catchThrowableOfType(StatusRuntimeException.class, call::run);
        assertThat(e).as("the call should fail with %s", expected).isNotNull();
        assertThat(e.getStatus().getCode()).as("%s", e.getStatus()).isEqualTo(expected);
        assertThat(e.getStatus().getDescription()).as("a message a person can act on").isNotBlank();
        return e;
    }
}
