package dev.blockpool.controller;

import csi.v1.Csi.ControllerModifyVolumeRequest;
import dev.blockpool.pool.ContentSource;
import dev.blockpool.pool.transfer.RemoteImage;
import java.util.Optional;

/**
 * The other nodes' pools, as a controller on a node-local pool reaches them: through the peer
 * channel, where the driver serves one ({@link #NONE} where it does not, or on a shared pool).
 */
public interface OtherNodes {

    /**
     * The source's image, opened for the transfer {@code transferId} on the other node whose pool
     * holds it; empty when no other node's does.
     */
    default Optional<RemoteImage> open(ContentSource source, String transferId) {
        return open(source, transferId, Optional.empty());
    }

    /**
     * {@link #open(ContentSource, String)} on {@code basis}, the identity of the transfer's earlier
     * image that this node holds whole ({@code ImageImports.basisFor}): a volume's next round, of
     * only what changed since, when the other node still keeps that image ({@link
     * RemoteImage#basis} then names it); else every range that holds data.
     */
    Optional<RemoteImage> open(ContentSource source, String transferId, Optional<String> basis);

    /**
     * Ends the transfer {@code transferId} on the node {@code nodeId}, once its destination holds
     * the image: that node's pool drops what it froze for it ({@code ImageExports.release}). A node
     * that cannot be reached is not an error here: its pool removes an export no pull has used for
     * a day.
     */
    void release(String nodeId, String transferId);

    /**
     * Hands ControllerModifyVolume to the other node whose pool holds the volume, which applies it
     * as its own; false when no other node's pool holds it.
     */
    boolean modifyVolume(ControllerModifyVolumeRequest request);

    /** Whether any other node is reached at all: false only for {@link #NONE}. */
    default boolean reachesAny() {
        return true;
    }

    /** Reaches no other node. */
    OtherNodes NONE = new OtherNodes() {
        @Override
        public boolean reachesAny() {
            return false;
        }

        @Override
        public Optional<RemoteImage> open(ContentSource source, String transferId, Optional<String> basis) {
            return Optional.empty();
        }

        @Override
        public void release(String nodeId, String transferId) {}

        @Override
        public boolean modifyVolume(ControllerModifyVolumeRequest request) {
            return false;
        }
    };
}
