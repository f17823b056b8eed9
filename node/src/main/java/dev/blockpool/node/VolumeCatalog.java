package dev.blockpool.node;

import java.util.Optional;

/**
 * The node's narrow view of the pool: it finds a volume's image by ID (never by a path from a
 * request), and creates and deletes the volumes of CSI ephemeral inline volumes.
 */
public interface VolumeCatalog {

    /**
     * The volume with this ID, or the ephemeral inline volume created for this handle (kubelet
     * picks the handle of an inline volume). Empty when there is none.
     */
    Optional<NodeVolume> find(String volumeId);

    /**
     * Where the image of a volume with this ID is or was, for tearing down what is left of a
     * volume that is gone; empty for an ID the pool could never have issued.
     */
    Optional<java.nio.file.Path> imageOf(String volumeId);

    /** An ID the pool could issue; such an ID never names an ephemeral inline volume. */
    default boolean isVolumeId(String volumeId) {
        return imageOf(volumeId).isPresent();
    }

    /** Creates (idempotently) the ephemeral inline volume for kubelet's handle. */
    NodeVolume createEphemeral(String handle, long capacityBytes, String fsType);

    /** Deletes a volume; a volume already gone is fine. */
    void delete(NodeVolume volume);
}
