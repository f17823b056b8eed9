package dev.blockpool.pool;

import java.util.Optional;

/**
 * What holds a volume on the node the controller serves beside. On a node-local pool one
 * process serves the controller and the node, and nothing is attached (attachRequired: false):
 * a volume staged or published there has no attachment in the pool for DeleteVolume to refuse
 * it by, only its loop device and mounts on this host. Where the driver holds no mounts
 * ({@link #NONE}: a controller of a shared pool, whose attachments say where a volume is in
 * use), nothing.
 *
 * <p>The controller's DeleteVolume asks it, and the node's {@code HostHolds} answers it where
 * one process serves both: the contract lives here, below the two, which never import each
 * other.
 */
public interface NodeHolds {

    /** What holds the volume's image on this node, in words for a person; empty when nothing does. */
    Optional<String> of(Volume volume);

    /** Knows of no holder. */
    NodeHolds NONE = volume -> Optional.empty();
}
