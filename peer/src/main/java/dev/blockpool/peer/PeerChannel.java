package dev.blockpool.peer;

import dev.blockpool.controller.OtherNodes;
import dev.blockpool.pool.transfer.ImageExports;
import java.io.IOException;
import java.security.GeneralSecurityException;
import java.util.Optional;

/**
 * The peer channel of one node as the driver starts and stops it: this node's certificate (issued
 * from the cluster CA and renewed while it runs), the client through which its controller reaches
 * the other nodes, and, once the pool is open, the server through which they reach this node's.
 */
public final class PeerChannel implements AutoCloseable {

    private final PeerConfig config;
    private final NodeCertificates certificates;
    private final PeerClient client;
    private Optional<PeerServer> server = Optional.empty();

    private PeerChannel(PeerConfig config, NodeCertificates certificates, PeerClient client) {
        this.config = config;
        this.certificates = certificates;
        this.client = client;
    }

    /**
     * This node's side of the channel, as node {@code nodeId}: IllegalArgumentException, in words
     * for the operator, when the CA cannot be read or issues no certificate.
     */
    public static PeerChannel open(PeerConfig config, String nodeId) {
        NodeCertificates certificates;
        try {
            certificates = NodeCertificates.issue(config.caDir(), nodeId);
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalArgumentException(
                    "cannot issue this node's peer certificate from the CA in " + config.caDir() + ": "
                            + e.getMessage() + " (make one with 'blockpool-csi " + PeerCaCommand.NAME
                            + " --out DIR', docs/peers.md)",
                    e);
        }
        certificates.refreshEvery(NodeCertificates.CHECK_EVERY);
        return new PeerChannel(config, certificates, new PeerClient(certificates, config.directory(nodeId)));
    }

    /** How this node's controller reaches the others' pools. */
    public OtherNodes otherNodes() {
        return client;
    }

    /** Serves this node's pool, its ControllerModifyVolume and its moved volumes' retirement to the other nodes; once. */
    public synchronized void serve(ImageExports exports, VolumeModifier modifier, VolumeRetirer retirer)
            throws IOException {
        if (server.isEmpty()) {
            server = Optional.of(PeerServer.start(
                    config.listen(), certificates, exports, modifier, retirer, config.bandwidthBytesPerSecond()));
        }
    }

    @Override
    public synchronized void close() {
        client.close();
        server.ifPresent(PeerServer::close);
        certificates.close();
    }
}
