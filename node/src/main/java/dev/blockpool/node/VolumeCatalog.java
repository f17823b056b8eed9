package dev.blockpool.node;

import dev.blockpool.common.HealthProblem;
import java.util.List;
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

    /**
     * Where the image of the volume with this ID, or of the inline volume of this handle, is in
     * the pool, found without reading the pool (the image need not exist): what a mount of the
     * volume is backed by.
     */
    java.nio.file.Path imageFor(String volumeId);

    /**
     * What calls on the volume are serialised under: its ID, and for the handle of an inline
     * volume the ID the pool gave it, which the controller's calls on it lock too.
     */
    String lockKey(String volumeId);

    /** An ID the pool could issue; such an ID never names an ephemeral inline volume. */
    default boolean isVolumeId(String volumeId) {
        return imageOf(volumeId).isPresent();
    }

    /**
     * What the pool knows is wrong with the volume (or the inline volume of this handle) and with
     * the pool; NOT_FOUND when there is no such volume.
     */
    List<HealthProblem> health(String volumeId);

    /** What is wrong with the pool itself, as this node sees it. */
    List<HealthProblem> storageHealth();

    /** Creates (idempotently) the ephemeral inline volume for kubelet's handle. */
    NodeVolume createEphemeral(String handle, long capacityBytes, String fsType);

    /**
     * Grows the volume's image to at least {@code bytes} where the node does it: on a node-local
     * pool no controller reaches the image, so NodeExpandVolume grows it; on a shared pool
     * ControllerExpandVolume has, and this leaves it alone.
     */
    void growImage(NodeVolume volume, long bytes);

    /** Deletes a volume; a volume already gone is fine. */
    void delete(NodeVolume volume);
}
