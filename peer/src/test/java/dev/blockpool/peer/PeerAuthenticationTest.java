package dev.blockpool.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.StorageException;
import dev.blockpool.peer.v1.LocateRequest;
import dev.blockpool.peer.v1.PeerGrpc;
import dev.blockpool.pool.ContentSource;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslProvider;
import java.nio.file.Path;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** Who may talk to a peer server, and whom a client takes for the node it meant to reach. */
class PeerAuthenticationTest {

    private static final ContentSource SNAPSHOT = ContentSource.snapshot("secret-snapshot-name");

    @TempDir
    Path otherCaDir;

    @RegisterExtension
    final TestPeers peers = new TestPeers();

    private FakeExports exports;
    private PeerServer server;

    @BeforeEach
    void serve() throws Exception {
        exports = new FakeExports().holding(SNAPSHOT, new byte[] {1, 2, 3});
        server = peers.server("node-b", exports);
    }

    @Test
    void aClientWithoutACertificateIsRefusedInTheHandshake() throws Exception {
        SslContext noCertificate = GrpcSslContexts.configure(
                        GrpcSslContexts.forClient()
                                .trustManager(peers.certificates("node-a").trustingOnly("node-b"))
                                .protocols(PeerTls.TLS_1_3),
                        SslProvider.JDK)
                .build();

        assertRefused(noCertificate);
    }

    @Test
    void aClientOfAnotherCaIsRefusedInTheHandshake() throws Exception {
        ClusterCa.create(otherCaDir, Instant.now());
        NodeCertificates stranger = peers.certificates(otherCaDir, "node-a");
        // it even trusts the server, to show the refusal is the server's
        SslContext otherCa = GrpcSslContexts.configure(
                        GrpcSslContexts.forClient()
                                .keyManager(stranger.keyManager())
                                .trustManager(peers.certificates("node-c").trustingOnly("node-b"))
                                .protocols(PeerTls.TLS_1_3),
                        SslProvider.JDK)
                .build();

        assertRefused(otherCa);
        assertThatThrownBy(() ->
                        peers.client(stranger, TestPeers.at("node-b", server)).open(SNAPSHOT, "transfer-1"))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.UNAVAILABLE))
                .hasMessageContaining("its certificate was refused: it does not lead to a CA of this node's ca.crt")
                .hasMessageNotContaining("Exception");
        assertThat(exports.calls).hasValue(0);
    }

    @Test
    void aClientOfferingOnlyTls12IsRefused() throws Exception {
        NodeCertificates nodeA = peers.certificates("node-a");
        SslContext tls12 = GrpcSslContexts.configure(
                        GrpcSslContexts.forClient()
                                .keyManager(nodeA.keyManager())
                                .trustManager(nodeA.trustingOnly("node-b"))
                                .protocols("TLSv1.2"),
                        SslProvider.JDK)
                .build();

        assertRefused(tls12);
    }

    @Test
    void aPlaintextClientIsRefused() {
        ManagedChannel plaintext = NettyChannelBuilder.forAddress("127.0.0.1", server.port())
                .usePlaintext()
                .build();
        try {
            assertThatThrownBy(() -> locate(plaintext)).isInstanceOf(StatusRuntimeException.class);
        } finally {
            plaintext.shutdownNow();
        }
        assertThat(exports.calls).hasValue(0);
    }

    @Test
    void aServerNamingAnotherNodeIsRefusedByTheClient() throws Exception {
        // The address given for node-c is node-b's: the client must not take node-b for node-c.
        PeerClient client = peers.client(peers.certificates("node-a"), TestPeers.at("node-c", server));

        assertThatThrownBy(() -> client.open(SNAPSHOT, "transfer-1"))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.UNAVAILABLE))
                .hasMessageContaining("the peer's certificate is node node-b's, not node node-c's");
        assertThat(exports.calls).hasValue(0);
    }

    @Test
    void aClientOfTheCaNamingItsNodeIsServed() throws Exception {
        PeerClient client = peers.client(peers.certificates("node-a"), TestPeers.at("node-b", server));

        assertThat(client.open(SNAPSHOT, "transfer-1")).isPresent();
    }

    /** The call fails, and the server's pool was never asked anything. */
    private void assertRefused(SslContext tls) {
        ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", server.port())
                .sslContext(tls)
                .build();
        try {
            assertThatThrownBy(() -> locate(channel))
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e -> assertThat(e.getStatus().getDescription()).doesNotContain("secret-snapshot-name"));
        } finally {
            channel.shutdownNow();
        }
        assertThat(exports.calls).hasValue(0);
    }

    private static void locate(ManagedChannel channel) {
        PeerGrpc.newBlockingStub(channel)
                .withDeadlineAfter(10, TimeUnit.SECONDS)
                .locate(LocateRequest.newBuilder()
                        .setSource(Wire.source(SNAPSHOT))
                        .build());
    }
}
