package dev.blockpool.peer;

import io.grpc.netty.shaded.io.netty.channel.Channel;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioServerSocketChannel;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The peer port's listening socket, which closes a connection as soon as it is accepted when
 * {@code most} are already open: before its TLS handshake, so connections that never finish one
 * cannot hold more than that many sockets and handshakes.
 */
final class BoundedServerSocketChannel extends NioServerSocketChannel {

    private static final Logger log = LoggerFactory.getLogger(BoundedServerSocketChannel.class);

    private final AtomicInteger open;
    private final int most;

    BoundedServerSocketChannel(AtomicInteger open, int most) {
        this.open = open;
        this.most = most;
    }

    @Override
    protected int doReadMessages(List<Object> accepted) throws Exception {
        int before = accepted.size();
        int read = super.doReadMessages(accepted);
        for (int i = accepted.size() - 1; i >= before; i--) {
            Channel connection = (Channel) accepted.get(i);
            if (open.incrementAndGet() > most) {
                open.decrementAndGet();
                accepted.remove(i);
                read--;
                log.debug("refused a peer connection from {}: {} are open", connection.remoteAddress(), most);
                connection.unsafe().closeForcibly();
            } else {
                connection.closeFuture().addListener(closed -> open.decrementAndGet());
            }
        }
        return read;
    }
}
