package dev.blockpool.driver.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnknownFieldSet;
import csi.v1.Csi.NodeGetInfoRequest;
import csi.v1.Csi.NodeGetInfoResponse;
import csi.v1.NodeGrpc;
import dev.blockpool.common.Endpoint;
import dev.blockpool.csi.UnixSocketChannels;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
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
    void aRequestLargerThanAnyCsiRequestIsRefusedAndTheNextOneServed() throws Exception {
        Path socket = dir.resolve("csi.sock");
        NodeGrpc.NodeImplBase node = new NodeGrpc.NodeImplBase() {
            @Override
            public void nodeGetInfo(NodeGetInfoRequest request, StreamObserver<NodeGetInfoResponse> response) {
                response.onNext(NodeGetInfoResponse.newBuilder().setNodeId("n").build());
                response.onCompleted();
            }
        };
        UnixSocketServer server =
                UnixSocketServer.start(Endpoint.parse(socket.toString()), List.of(node.bindService()), List.of());
        EventLoopGroup clientLoop = UnixSocketChannels.clientLoop();
        ManagedChannel channel = UnixSocketChannels.channel(socket, clientLoop);
        try {
            NodeGrpc.NodeBlockingStub stub = NodeGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS);
            // An unknown field of the size of a Kubernetes Secret: what parses is not what is bounded.
            NodeGetInfoRequest large = NodeGetInfoRequest.newBuilder()
                    .setUnknownFields(UnknownFieldSet.newBuilder()
                            .addField(
                                    99,
                                    UnknownFieldSet.Field.newBuilder()
                                            .addLengthDelimited(ByteString.copyFrom(new byte[1 << 20]))
                                            .build())
                            .build())
                    .build();
            assertThatThrownBy(() -> stub.nodeGetInfo(large))
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED));
            assertThat(stub.nodeGetInfo(NodeGetInfoRequest.getDefaultInstance()).getNodeId())
                    .isEqualTo("n");
        } finally {
            channel.shutdownNow();
            clientLoop.shutdownGracefully();
            server.stop(Duration.ofSeconds(1));
        }
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
