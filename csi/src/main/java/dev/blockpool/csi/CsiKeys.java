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
     * How the image's blocks are provided: {@code sparse} (default) or {@code preallocated}. The
     * one mutable parameter too: a VolumeAttributesClass sets it through CreateVolume's and
     * ControllerModifyVolume's mutable_parameters (external-provisioner and external-resizer
     * pass them), where it overrides the StorageClass's.
     */
    public static final String ALLOCATION = "allocation";

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
