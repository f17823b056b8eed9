package dev.blockpool.driver;

import csi.v1.Csi.ProbeRequest;
import csi.v1.IdentityGrpc;
import dev.blockpool.common.Endpoint;
import dev.blockpool.csi.PoolScope;
import dev.blockpool.csi.UnixSocketChannels;
import dev.blockpool.pool.ReconcileSteps;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Drivers started in this process on one pool, {@code dir/pool}, each serving on a socket of its
 * own name, and clients of them; {@link #close} ends every one. Their reconcile does not run
 * within a test: it would take the pool in the background.
 */
final class DriversOnOnePool implements AutoCloseable {

    private static final Duration STOP_GRACE = Duration.ofSeconds(10);

    private final Path dir;
    private final EventLoopGroup clientLoop = UnixSocketChannels.clientLoop();
    private final List<Driver.Running> drivers = new ArrayList<>();
    private final List<ManagedChannel> channels = new ArrayList<>();

    DriversOnOnePool(Path dir) {
        this.dir = dir;
    }

    Driver.Running start(String name, String nodeId, Mode mode) throws Exception {
        return start(name, nodeId, mode, PoolScope.Kind.SHARED);
    }

    /** A driver of the pool as {@code scope} says: a node-local pool's is started in {@link Mode#ALL}. */
    Driver.Running start(String name, String nodeId, Mode mode, PoolScope.Kind scope) throws Exception {
        Driver.Running running = new Driver(
                        new DriverConfig(
                                socket(name),
                                nodeId,
                                "blockpool.csi.dev",
                                dir.resolve("pool"),
                                mode,
                                8,
                                scope,
                                Optional.empty()),
                        "test",
                        new Driver.Background(Duration.ofDays(1), ReconcileSteps.ALL))
                .start();
        drivers.add(running);
        return running;
    }

    /** A client of the driver started as {@code name}. */
    ManagedChannel channel(String name) {
        ManagedChannel channel = UnixSocketChannels.channel(socket(name).socketPath(), clientLoop);
        channels.add(channel);
        return channel;
    }

    /** What the driver's Probe answers, as a livenessprobe or the CO asks it. */
    static boolean ready(ManagedChannel channel) {
        return IdentityGrpc.newBlockingStub(channel)
                .probe(ProbeRequest.getDefaultInstance())
                .getReady()
                .getValue();
    }

    private Endpoint socket(String name) {
        return Endpoint.parse(dir.resolve(name + ".sock").toString());
    }

    @Override
    public void close() {
        channels.forEach(ManagedChannel::shutdownNow);
        drivers.forEach(driver -> driver.stop(STOP_GRACE));
        clientLoop.shutdownGracefully();
    }
}
