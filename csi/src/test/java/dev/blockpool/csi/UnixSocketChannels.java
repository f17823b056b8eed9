package dev.blockpool.csi;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import java.nio.file.Path;

/**
 * A test's client of the driver on its Unix socket, connected as kubelet and the sidecars connect:
 * plaintext gRPC over epoll's domain socket channel, on an event loop the test shuts down.
 */
public final class UnixSocketChannels {

    private UnixSocketChannels() {}

    /** An epoll event loop of one thread, which a domain socket channel needs; the caller shuts it down. */
    public static EventLoopGroup clientLoop() {
        return new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
    }

    /**
     * An epoll event loop of one daemon thread for a test that keeps it until the JVM ends: one
     * whose channels die with the driver they call, and whose calls must still meet their deadlines.
     */
    public static EventLoopGroup sharedClientLoop() {
        return new MultiThreadIoEventLoopGroup(
                1, new DefaultThreadFactory("csi-client", true), EpollIoHandler.newFactory());
    }

    /** A channel to the server on {@code socket}, on {@code loop}. */
    public static ManagedChannel channel(Path socket, EventLoopGroup loop) {
        return builder(socket, loop).build();
    }

    /** The builder of {@link #channel}, for a test that sets more of the channel (e.g. its limits). */
    public static NettyChannelBuilder builder(Path socket, EventLoopGroup loop) {
        return NettyChannelBuilder.forAddress(new DomainSocketAddress(socket.toString()))
                .channelType(EpollDomainSocketChannel.class)
                .eventLoopGroup(loop)
                .usePlaintext();
    }
}
