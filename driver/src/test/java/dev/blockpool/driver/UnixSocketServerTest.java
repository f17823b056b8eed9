package dev.blockpool.driver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.Endpoint;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class UnixSocketServerTest {

    @TempDir
    Path dir;

    @Test
    void staleSocketIsRemoved() throws IOException {
        Path socket = dir.resolve("csi.sock");
        try (ServerSocketChannel dead = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            dead.bind(UnixDomainSocketAddress.of(socket));
        } // closed: the file stays, nobody listens
        assertThat(socket).exists();
        UnixSocketServer.clearStaleSocket(socket);
        assertThat(socket).doesNotExist();
    }

    @Test
    void liveSocketIsNotStolen() throws IOException {
        Path socket = dir.resolve("csi.sock");
        try (ServerSocketChannel live = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            live.bind(UnixDomainSocketAddress.of(socket));
            assertThatThrownBy(() -> UnixSocketServer.clearStaleSocket(socket))
                    .hasMessageContaining("another process is serving on");
            assertThat(socket).exists();
        }
    }

    @Test
    void regularFileAtTheSocketPathIsNotDeleted() throws IOException {
        Path notASocket = Files.writeString(dir.resolve("csi.sock"), "data");
        assertThatThrownBy(() -> UnixSocketServer.clearStaleSocket(notASocket)).hasMessageContaining("is not a socket");
        assertThat(notASocket).hasContent("data");
    }

    @Test
    void serverSocketIsOwnerAndGroupOnlyAndRemovedOnStop() throws IOException {
        Path socket = dir.resolve("run/csi.sock");
        UnixSocketServer server = UnixSocketServer.start(Endpoint.parse(socket.toString()), List.of(), List.of());
        try {
            assertThat(Files.getPosixFilePermissions(socket))
                    .containsExactlyInAnyOrder(
                            PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE,
                            PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_WRITE);
            assertThatThrownBy(() -> UnixSocketServer.start(Endpoint.parse(socket.toString()), List.of(), List.of()))
                    .hasMessageContaining("another process is serving on");
        } finally {
            server.stop(Duration.ofSeconds(1));
        }
        assertThat(socket).doesNotExist();
    }
}
