package dev.blockpool.peer;

import dev.blockpool.metrics.HttpAddress;
import dev.blockpool.pool.transfer.ImageExports;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * Peer servers and clients on this machine's loopback, each with a certificate of a CA made in a
 * test's directory; everything made is closed by {@link #close}.
 */
final class TestPeers implements AutoCloseable {

    private final List<AutoCloseable> made = new ArrayList<>();
    final Path caDir;

    /** A new CA in {@code caDir}. */
    TestPeers(Path caDir) throws Exception {
        this.caDir = caDir;
        ClusterCa.create(caDir, Instant.now());
    }

    NodeCertificates certificates(String node) throws Exception {
        return certificates(caDir, node);
    }

    NodeCertificates certificates(Path caDir, String node) throws Exception {
        return keep(NodeCertificates.issue(caDir, node));
    }

    PeerServer server(String node, ImageExports exports) throws Exception {
        return server(
                certificates(node),
                exports,
                VolumeModifier.NONE,
                PeerServer.Bounds.DEFAULT,
                BandwidthLimit.unlimited());
    }

    PeerServer server(
            NodeCertificates certificates,
            ImageExports exports,
            VolumeModifier modifier,
            PeerServer.Bounds bounds,
            BandwidthLimit bandwidth)
            throws Exception {
        return keep(
                PeerServer.start(new HttpAddress("127.0.0.1", 0), certificates, exports, modifier, bounds, bandwidth));
    }

    PeerClient client(NodeCertificates certificates, PeerAddress... peers) {
        return keep(new PeerClient(certificates, PeerDirectory.of(List.of(peers))));
    }

    static PeerAddress at(String node, PeerServer server) {
        return new PeerAddress(node, "127.0.0.1", server.port());
    }

    <T extends AutoCloseable> T keep(T closeable) {
        made.add(closeable);
        return closeable;
    }

    @Override
    public void close() {
        for (AutoCloseable closeable : made.reversed()) {
            try {
                closeable.close();
            } catch (Exception e) {
                throw new IllegalStateException("closing " + closeable + " failed", e);
            }
        }
    }
}
