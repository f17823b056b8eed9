package dev.blockpool.csi;

/**
 * Every key blockpool reads from or writes to a CSI map, in one place. Each is part of the
 * driver's contract with Kubernetes (StorageClasses, PersistentVolumes and pod specs written by
 * users carry them), so none may change without a migration. docs/architecture.md lists them.
 */
public final class CsiKeys {

    private CsiKeys() {}

    // ---- CreateVolume parameters: a StorageClass's parameters ------------------------------

    /**
     * The filesystem NodeStage formats the volume with: {@code ext4} (default) or {@code xfs}.
     * Also a volume_context key: CreateVolume returns it, NodeStage and an inline volume read it.
     */
    public static final String FS_TYPE = "fsType";

    /**
     * How the image's blocks are provided: {@code sparse} (default) or {@code preallocated}. A
     * mutable parameter too, as the I/O limits below are: a VolumeAttributesClass sets it through CreateVolume's and
     * ControllerModifyVolume's mutable_parameters (external-provisioner and external-resizer
     * pass them), where it overrides the StorageClass's.
     */
    public static final String ALLOCATION = "allocation";

    /**
     * The volume's pods may read at most this many I/O operations per second from it: a whole
     * number, or {@code 0} or {@code unlimited} (the default) for no limit. Like the three below,
     * a StorageClass sets it at CreateVolume and a VolumeAttributesClass (mutable parameters)
     * sets or changes it; a key the class leaves out keeps the StorageClass's value. Each node
     * applies it to the volume's loop device in the cgroups of the pods it publishes the volume to.
     */
    public static final String READ_IOPS = "readIOPS";

    /** The volume's pods may write at most this many I/O operations per second: as {@link #READ_IOPS}. */
    public static final String WRITE_IOPS = "writeIOPS";

    /**
     * The volume's pods may read at most this many bytes per second, a quantity as Kubernetes
     * writes them ({@code 50Mi}, {@code 100M}): otherwise as {@link #READ_IOPS}.
     */
    public static final String READ_BYTES_PER_SECOND = "readBytesPerSecond";

    /** The volume's pods may write at most this many bytes per second: as {@link #READ_BYTES_PER_SECOND}. */
    public static final String WRITE_BYTES_PER_SECOND = "writeBytesPerSecond";

    /**
     * Keys external-provisioner adds itself (e.g. PVC name and namespace with
     * --extra-create-metadata): accepted and ignored.
     */
    public static final String PROVISIONER_PREFIX = "csi.storage.k8s.io/";

    // ---- volume_context of NodePublish -----------------------------------------------------

    /**
     * kubelet sets it to "true" for a CSI ephemeral inline volume. The driver also stores it in
     * the parameters of the pool volume it creates for one, so NodeUnpublish can tell an
     * inline volume (deleted with its pod) from a persistent one (never deleted by the node).
     * CreateVolume refuses it.
     */
    public static final String EPHEMERAL = PROVISIONER_PREFIX + "ephemeral";

    /** An inline volume's size, as Kubernetes writes quantities ("1Gi"); 1 GiB when absent. */
    public static final String EPHEMERAL_SIZE = "size";

    // ---- publish_context: ControllerPublish's answer, passed to NodeStage/NodePublish ------

    /** "true" when the attachment is read-only; the node then mounts read-only. */
    public static final String READONLY = "readonly";

    // ---- topology: NodeGetInfo's accessible_topology -----------------------------------------

    /** The node's own segment: the node ID. */
    public static final String TOPOLOGY_NODE = "topology.blockpool.csi.dev/node";
}
