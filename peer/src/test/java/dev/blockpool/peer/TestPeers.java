package dev.blockpool.peer;

import dev.blockpool.metrics.HttpAddress;
import dev.blockpool.pool.transfer.ImageExports;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Peer servers and clients on this machine's loopback, each with a certificate of a CA made for
 * each test in a directory of its own; everything made is closed after the test, the directory
 * removed. A test registers it as an extension.
 */
final class TestPeers implements BeforeEachCallback, AfterEachCallback {

    private final List<AutoCloseable> made = new ArrayList<>();
    Path caDir;

    @Override
    public void beforeEach(ExtensionContext context) throws Exception {
        caDir = Files.createTempDirectory("peer-ca");
        ClusterCa.create(caDir, Instant.now());
    }

    @Override
    public void afterEach(ExtensionContext context) throws Exception {
        close();
        try (Stream<Path> files = Files.walk(caDir)) {
            for (Path file : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(file);
            }
        }
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
        return server(certificates, exports, modifier, VolumeRetirer.NONE, bounds, bandwidth);
    }

    PeerServer server(
            NodeCertificates certificates,
            ImageExports exports,
            VolumeModifier modifier,
            VolumeRetirer retirer,
            PeerServer.Bounds bounds,
            BandwidthLimit bandwidth)
            throws Exception {
        return keep(PeerServer.start(
                new HttpAddress("127.0.0.1", 0), certificates, exports, modifier, retirer, bounds, bandwidth));
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

    void close() {
        for (AutoCloseable closeable : made.reversed()) {
            try {
                closeable.close();
            } catch (Exception e) {
                throw new IllegalStateException("closing " + closeable + " failed", e);
            }
        }
        made.clear();
    }
}
