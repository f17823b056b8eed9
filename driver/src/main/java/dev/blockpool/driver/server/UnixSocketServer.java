package dev.blockpool.driver.server;

import dev.blockpool.common.Endpoint;
import dev.blockpool.common.Libc;
import io.grpc.Server;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import io.grpc.util.MutableHandlerRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A gRPC server on a Unix domain socket, through grpc-netty-shaded's epoll transport. It removes
 * a stale socket left by a dead process but refuses to steal one that a live process answers on,
 * restricts the socket to owner and group, and on {@link #stop} drains in-flight calls within a
 * grace period before removing the socket.
 */
public final class UnixSocketServer {

    private static final Logger log = LoggerFactory.getLogger(UnixSocketServer.class);

    /**
     * Calls at once on one connection: beyond, the client's next call waits for one to end (the
     * sidecars' 100 workers share one). With {@link #MOST_REQUEST_BYTES}, what one connection can
     * make the driver hold in requests.
     */
    static final int MOST_CALLS_PER_CONNECTION = 128;
    /**
     * The largest request taken, larger ones refused with RESOURCE_EXHAUSTED: a CSI request is a
     * few KiB (the driver takes no secrets; a group snapshot of 1,000 volumes names them in 128
     * KiB). A call holds its request while it runs, so this times the calls that can run at once
     * is what requests can take of the heap.
     */
    static final int MOST_REQUEST_BYTES = 128 << 10;
    /** The most bytes of a call's headers, as gRPC's default. */
    static final int MOST_HEADER_BYTES = 8 << 10;

    private final Path socket;
    private final Server server;
    private final EventLoopGroup boss;
    private final EventLoopGroup workers;
    private final CallThreads calls;
    private final HealthStatusManager health;
    /** The services served after the start, each through {@link #around}. */
    private final MutableHandlerRegistry later;

    private final UnaryOperator<ServerServiceDefinition> around;

    private UnixSocketServer(
            Path socket,
            Server server,
            EventLoopGroup boss,
            EventLoopGroup workers,
            CallThreads calls,
            HealthStatusManager health,
            MutableHandlerRegistry later,
            UnaryOperator<ServerServiceDefinition> around) {
        this.socket = socket;
        this.server = server;
        this.boss = boss;
        this.workers = workers;
        this.calls = calls;
        this.health = health;
        this.later = later;
        this.around = around;
    }

    /**
     * Serves {@code services} through {@code interceptors}, plus the standard gRPC health service
     * and server reflection (v1), so that grpcurl works without proto files.
     */
    public static UnixSocketServer start(
            Endpoint endpoint, List<ServerServiceDefinition> services, List<ServerInterceptor> interceptors)
            throws IOException {
        return start(endpoint, services, interceptors, List.of());
    }

    /**
     * {@link #start(Endpoint, List, List)}, with {@code observers} around all that: they see each
     * call as the client does, a malformed request's INVALID_ARGUMENT too.
     */
    public static UnixSocketServer start(
            Endpoint endpoint,
            List<ServerServiceDefinition> services,
            List<ServerInterceptor> interceptors,
            List<ServerInterceptor> observers)
            throws IOException {
        return start(endpoint, services, List.of(), interceptors, observers);
    }

    /**
     * {@link #start(Endpoint, List, List, List)}, serving {@code standIns} too until {@link #serve}
     * replaces each with the service of its name.
     */
    public static UnixSocketServer start(
            Endpoint endpoint,
            List<ServerServiceDefinition> services,
            List<ServerServiceDefinition> standIns,
            List<ServerInterceptor> interceptors,
            List<ServerInterceptor> observers)
            throws IOException {
        return start(endpoint, services, standIns, interceptors, observers, new CallThreads());
    }

    /**
     * {@link #start(Endpoint, List, List, List, List)}, the calls running on {@code threads}, which it closes at its
     * stop.
     */
    public static UnixSocketServer start(
            Endpoint endpoint,
            List<ServerServiceDefinition> services,
            List<ServerServiceDefinition> standIns,
            List<ServerInterceptor> interceptors,
            List<ServerInterceptor> observers,
            CallThreads threads)
            throws IOException {
        if (!Epoll.isAvailable()) {
            throw new IOException("the epoll transport is unavailable on this host: " + Epoll.unavailabilityCause());
        }
        Path socket = endpoint.socketPath();
        Files.createDirectories(socket.getParent());
        clearStaleSocket(socket);

        EventLoopGroup boss = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
        EventLoopGroup workers = new MultiThreadIoEventLoopGroup(2, EpollIoHandler.newFactory());
        // A call is looked up on the transport thread, and then placed (CallPlacement): most on a
        // platform thread of their own (CallThreads), which CallDeadlines answers in time.
        NettyServerBuilder builder = NettyServerBuilder.forAddress(new DomainSocketAddress(socket.toString()))
                .channelType(EpollServerDomainSocketChannel.class)
                .bossEventLoopGroup(boss)
                .workerEventLoopGroup(workers)
                .directExecutor()
                .callExecutor(new CallPlacement(threads))
                // What one client can make the driver hold.
                .maxConcurrentCallsPerConnection(MOST_CALLS_PER_CONNECTION)
                .maxInboundMessageSize(MOST_REQUEST_BYTES)
                .maxInboundMetadataSize(MOST_HEADER_BYTES);
        MalformedRequestGuard malformed = new MalformedRequestGuard();
        UnaryOperator<ServerServiceDefinition> around = service -> ServerInterceptors.intercept(
                malformed.wrap(ServerInterceptors.intercept(service, interceptors)), observers);
        services.forEach(service -> builder.addService(around.apply(service)));
        // Looked up only for what the services above do not serve.
        MutableHandlerRegistry later = new MutableHandlerRegistry();
        standIns.forEach(service -> later.addService(around.apply(service)));
        builder.fallbackHandlerRegistry(later);
        HealthStatusManager health = new HealthStatusManager();
        builder.addService(health.getHealthService());
        builder.addService(ProtoReflectionServiceV1.newInstance());
        Server server = builder.build().start();
        Files.setPosixFilePermissions(socket, PosixFilePermissions.fromString("rw-rw----"));
        health.setStatus("", HealthCheckResponse.ServingStatus.SERVING);
        log.info("listening on unix://{}", socket);
        return new UnixSocketServer(socket, server, boss, workers, threads, health, later, around);
    }

    /** Serves {@code services} from now on, through the same interceptors, each in place of its stand-in. */
    public void serve(List<ServerServiceDefinition> services) {
        services.forEach(service -> later.addService(around.apply(service)));
    }

    /**
     * A socket file nobody answers on is a leftover of a process that died: remove it. One that
     * answers belongs to a running driver: refuse to start rather than cut it off. Anything that
     * is not a socket is not ours to delete.
     */
    static void clearStaleSocket(Path socket) throws IOException {
        if (!Files.exists(socket, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        if (!isSocket(socket)) {
            throw new IOException(socket + " exists and is not a socket; refusing to replace it");
        }
        try (SocketChannel probe = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            probe.connect(UnixDomainSocketAddress.of(socket));
            throw new IOException("another process is serving on " + socket + "; refusing to take its socket");
        } catch (java.net.ConnectException refused) {
            log.info("removing stale socket {} left by a previous run", socket);
            Files.delete(socket);
        }
    }

    private static boolean isSocket(Path path) throws IOException {
        int mode = (Integer) Files.getAttribute(path, "unix:mode", LinkOption.NOFOLLOW_LINKS);
        return (mode & Libc.S_IFMT) == Libc.S_IFSOCK;
    }

    public Path socket() {
        return socket;
    }

    public void awaitTermination() throws InterruptedException {
        server.awaitTermination();
    }

    /** Stops accepting calls, lets in-flight ones finish within {@code grace}, removes the socket. */
    public void stop(Duration grace) {
        log.info("shutting down: draining in-flight calls for up to {}s", grace.toSeconds());
        health.enterTerminalState();
        server.shutdown();
        try {
            if (!server.awaitTermination(grace.toMillis(), TimeUnit.MILLISECONDS)) {
                log.warn("calls still running after {}s; cancelling them", grace.toSeconds());
                server.shutdownNow();
                server.awaitTermination(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            server.shutdownNow();
            Thread.currentThread().interrupt();
        } finally {
            boss.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            workers.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            calls.close();
            try {
                Files.deleteIfExists(socket);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot remove socket " + socket, e);
            }
            log.info("server stopped; socket {} removed", socket);
        }
    }
}
