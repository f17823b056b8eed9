package dev.blockpool.pool;

/**
 * Where the controller is served beside the node, what applies a volume's I/O limits on this
 * node at once when ControllerModifyVolume changes them, rather than at the node's next look at
 * its published volumes. Like {@link NodeHolds}, the contract lives here, below the controller
 * and the node, which never import each other.
 */
public interface NodeIoLimits {

    /** Applies the volume's limits, as its record has them, to every pod this node publishes it to. */
    void apply(Volume volume);

    /** No node here: each node's own look applies them. */
    NodeIoLimits NONE = volume -> {};
}
