package dev.blockpool.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.StorageException;
import dev.blockpool.pool.ContentSource;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A CA rotated on disk, step by step as docs/peers.md tells it, while a server keeps running:
 * each node picks the change up at its next refresh, driven here by the test.
 */
class PeerRotationTest {

    private static final ContentSource SNAPSHOT = ContentSource.snapshot("snap-1");

    @RegisterExtension
    final TestPeers peers = new TestPeers();

    @Test
    void aRotatedCaIsPickedUpByARunningServerAndItsClients() throws Exception {
        NodeCertificates nodeA = peers.certificates("node-a");
        NodeCertificates nodeB = peers.certificates("node-b");
        PeerServer server = peers.server(
                nodeB,
                new FakeExports().holding(SNAPSHOT, new byte[] {1}),
                VolumeModifier.NONE,
                PeerServer.Bounds.DEFAULT,
                BandwidthLimit.unlimited());
        assertReaches(nodeA, server);

        // 1. a new CA joins the bundle; both nodes trust it, and sign with the old one still
        ClusterCa.rotate(peers.caDir, Instant.now());
        assertThat(nodeA.refresh()).isTrue();
        assertThat(nodeB.refresh()).isTrue();
        assertReaches(nodeA, server);

        // 2. node A signs with the new key; node B, not yet refreshed, trusts it already
        ClusterCa.switchKey(peers.caDir);
        assertThat(nodeA.refresh()).isTrue();
        assertReaches(nodeA, server);

        // 3. the old CA leaves the bundle: node A no longer takes node B's old certificate ...
        ClusterCa.retireOld(peers.caDir);
        assertThat(nodeA.refresh()).isTrue();
        assertThatThrownBy(() -> reach(nodeA, server))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.UNAVAILABLE));

        // ... until node B has read the files too, without a restart of its server
        assertThat(nodeB.refresh()).isTrue();
        assertReaches(nodeA, server);
    }

    @Test
    void aCertificateIsRenewedAtHalfItsLifeAndNotBefore() throws Exception {
        AtomicReference<Instant> now = new AtomicReference<>(Instant.parse("2026-01-01T00:00:00Z"));
        InstantSource clock = now::get;
        NodeCertificates node = peers.keep(NodeCertificates.issue(peers.caDir, "node-a", clock));

        now.set(now.get().plus(NodeCertificates.LIFETIME.dividedBy(2)).minus(Duration.ofSeconds(1)));
        assertThat(node.refresh()).isFalse();

        now.set(now.get().plus(Duration.ofSeconds(1)));
        assertThat(node.refresh()).isTrue();
        assertThat(node.keyManager()
                        .getCertificateChain(node.keyManager().chooseEngineServerAlias("EC", null, null))[0]
                        .getNotAfter()
                        .toInstant())
                .isEqualTo(now.get().plus(NodeCertificates.LIFETIME));
    }

    @Test
    void aKeyWhoseCertificateIsNotInTheBundleIsRefusedAndTheCurrentCertificateKept() throws Exception {
        NodeCertificates node = peers.certificates("node-a");
        ClusterCa.rotate(peers.caDir, Instant.now());
        // the new key moved in by hand without its certificate in the bundle: an operator's slip
        Files.move(
                peers.caDir.resolve(ClusterCa.NEXT_KEY),
                peers.caDir.resolve(ClusterCa.KEY),
                StandardCopyOption.REPLACE_EXISTING);
        Files.writeString(
                peers.caDir.resolve(ClusterCa.BUNDLE),
                Pem.text(List.of(node.keyManager()
                        .getCertificateChain(node.keyManager().chooseEngineServerAlias("EC", null, null))[1])));

        assertThatThrownBy(node::refresh)
                .hasMessageContaining("is the key of no certificate in")
                .hasMessageNotContaining("PRIVATE KEY");
        assertThat(node.keyManager().chooseEngineServerAlias("EC", null, null)).isNotNull();
    }

    private void assertReaches(NodeCertificates client, PeerServer server) {
        assertThat(reach(client, server)).isTrue();
    }

    /** A new client each time: a TLS handshake is made only for a new connection. */
    private boolean reach(NodeCertificates client, PeerServer server) {
        try (PeerClient fresh = new PeerClient(client, PeerDirectory.of(List.of(TestPeers.at("node-b", server))))) {
            return fresh.open(SNAPSHOT, "transfer-1").isPresent();
        }
    }
}
