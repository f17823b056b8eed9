package dev.blockpool.peer;

import dev.blockpool.csi.StatusInterceptor;
import dev.blockpool.metrics.HttpAddress;
import dev.blockpool.pool.transfer.ImageExports;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.nio.NioIoHandler;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The peer channel's server: the Peer service on a TCP port, over mutual TLS ({@link PeerTls}),
 * bounded like the driver's other surfaces in everything a client can make it hold ({@link
 * Bounds}) and in the bytes per second it serves ({@link BandwidthLimit}). What a client sends is
 * at worst refused: every failure becomes a status, none reaches the process.
 */
public final class PeerServer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(PeerServer.class);

    /** What a client can make the server hold, and for how long. */
    record Bounds(
            int connections,
            Duration handshake,
            int requestBytes,
            int callsPerConnection,
            Duration connectionIdle,
            Duration connectionAge,
            Duration callDeadline,
            int threads) {

        static final Bounds DEFAULT = new Bounds(
                64, // connections: a few per other node
                Duration.ofSeconds(10), // to finish the TLS handshake
                64 << 10, // a request: every one is a few hundred bytes, ModifyVolume's a few KiB
                16, // calls at once on one connection
                Duration.ofMinutes(5), // a connection without calls is closed then
                Duration.ofMinutes(30), // and any connection then (after its calls, within a minute)
                Duration.ofSeconds(60), // a call, reads paced by the bandwidth limit included
                8); // calls at once in all
    }

    /** The most bytes of a call's headers, as gRPC's default. */
    private static final int MOST_HEADER_BYTES = 8 << 10;

    private final Server server;
    private final EventLoopGroup boss;
    private final EventLoopGroup workers;
    private final PeerCalls calls;
    private final AtomicInteger connections;

    private PeerServer(
            Server server, EventLoopGroup boss, EventLoopGroup workers, PeerCalls calls, AtomicInteger connections) {
        this.server = server;
        this.boss = boss;
        this.workers = workers;
        this.calls = calls;
        this.connections = connections;
    }

    /**
     * Serves this node's pool ({@code exports}), ControllerModifyVolume ({@code modifier}) and the
     * retirement of volumes that moved away ({@code retirer}) to its peers on {@code listen}, at most {@code bandwidthBytesPerSecond} (0: no limit).
     */
    public static PeerServer start(
            HttpAddress listen,
            NodeCertificates certificates,
            ImageExports exports,
            VolumeModifier modifier,
            VolumeRetirer retirer,
            long bandwidthBytesPerSecond)
            throws IOException {
        return start(
                listen,
                certificates,
                exports,
                modifier,
                retirer,
                Bounds.DEFAULT,
                new BandwidthLimit(bandwidthBytesPerSecond, BandwidthLimit.SYSTEM));
    }

    static PeerServer start(
            HttpAddress listen,
            NodeCertificates certificates,
            ImageExports exports,
            VolumeModifier modifier,
            VolumeRetirer retirer,
            Bounds bounds,
            BandwidthLimit bandwidth)
            throws IOException {
        InetSocketAddress bind = listen.host().isEmpty()
                ? new InetSocketAddress(listen.port())
                : new InetSocketAddress(listen.host(), listen.port());
        AtomicInteger connections = new AtomicInteger();
        EventLoopGroup boss = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        EventLoopGroup workers = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
        PeerCalls calls = new PeerCalls(bounds.threads(), bounds.callDeadline());
        PeerService service = new PeerService(exports, modifier, retirer, calls, bandwidth);
        Server server = NettyServerBuilder.forAddress(bind)
                .channelFactory(() -> new BoundedServerSocketChannel(connections, bounds.connections()))
                .bossEventLoopGroup(boss)
                .workerEventLoopGroup(workers)
                .sslContext(PeerTls.server(certificates))
                // each call only checks its request here and goes on on PeerCalls' threads
                .directExecutor()
                .handshakeTimeout(bounds.handshake().toMillis(), TimeUnit.MILLISECONDS)
                .maxInboundMessageSize(bounds.requestBytes())
                .maxInboundMetadataSize(MOST_HEADER_BYTES)
                .maxConcurrentCallsPerConnection(bounds.callsPerConnection())
                .maxConnectionIdle(bounds.connectionIdle().toMillis(), TimeUnit.MILLISECONDS)
                .maxConnectionAge(bounds.connectionAge().toMillis(), TimeUnit.MILLISECONDS)
                .maxConnectionAgeGrace(1, TimeUnit.MINUTES)
                .addService(ServerInterceptors.intercept(service, new StatusInterceptor(), new CallerNode()))
                .build();
        try {
            server.start();
        } catch (IOException e) {
            calls.close();
            boss.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            workers.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw new IOException("cannot serve the peer channel on " + listen + ": " + e.getMessage(), e);
        }
        log.info(
                "serving peers on {} (mutual TLS as node {}; {})",
                listen,
                certificates.nodeId(),
                bandwidth.bytesPerSecond() == 0 ? "no bandwidth limit" : bandwidth.bytesPerSecond() + " bytes/s");
        return new PeerServer(server, boss, workers, calls, connections);
    }

    /** The port it listens on: the one asked for, or the one the system chose for port 0. */
    public int port() {
        return ((InetSocketAddress) server.getListenSockets().getFirst()).getPort();
    }

    /** The connections open now. */
    int connections() {
        return connections.get();
    }

    /** Stops at once: a peer's pull resumes later from what it holds. */
    @Override
    public void close() {
        server.shutdownNow();
        try {
            server.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            calls.close();
            boss.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            workers.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        }
    }
}
