package dev.blockpool.pool;

import dev.blockpool.common.Quoting;
import dev.blockpool.common.StorageException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * ControllerPublish and ControllerUnpublish on the pool: durable attachment records in the
 * volume's metadata, single-node access and each node's attach limit enforced.
 */
public final class Attachments {

    private final Volumes volumes;
    private final Nodes nodes;
    private final RecordLock lock;

    Attachments(Volumes volumes, Nodes nodes, RecordLock lock) {
        this.volumes = volumes;
        this.nodes = nodes;
        this.lock = lock;
    }

    /**
     * Attaches the volume to the node, or confirms an identical existing attachment. Every check
     * and the write rest on one reading of the pool under its {@link RecordLock}, so neither the
     * single-node rule nor the node's limit can be passed by an attach in another process.
     *
     * @param singleNode whether the access mode allows only one node at a time
     */
    public Volume attach(String volumeId, String nodeId, boolean readonly, boolean singleNode) {
        NodeRecord node = nodes.find(nodeId).orElseThrow(() ->
                StorageException.notFound("node %s is not registered with the pool", Quoting.quote(nodeId)));
        return lock.locked(() -> volumes.update(volumeId, volume -> {
            Optional<Attachment> existing = volume.attachmentOn(nodeId);
            if (existing.isPresent()) {
                if (existing.get().readonly() != readonly || existing.get().multiNode() == singleNode) {
                    throw StorageException.conflict(
                            "volume %s is already published to node %s with readonly=%s and a %s access mode",
                            volumeId, nodeId, existing.get().readonly(),
                            existing.get().multiNode() ? "multi-node" : "single-node");
                }
                return volume;
            }
            // Another node may join only when both its access mode and every existing attachment's allow it.
            Optional<Attachment> exclusive = volume.attachments().stream()
                    .filter(a -> singleNode || !a.multiNode()).findFirst();
            if (exclusive.isPresent()) {
                throw StorageException.precondition(
                        "volume %s is already published to node %s and a single-node access mode keeps other nodes out",
                        volumeId, exclusive.get().nodeId());
            }
            long attached = volumes.list().stream().filter(v -> v.attachmentOn(nodeId).isPresent()).count();
            if (attached >= node.maxVolumesPerNode()) {
                throw StorageException.limitReached("node %s already has %d volumes attached, its limit", nodeId,
                        attached);
            }
            List<Attachment> attachments = new ArrayList<>(volume.attachments());
            attachments.add(new Attachment(nodeId, readonly, !singleNode));
            return volume.withAttachments(attachments);
        })).orElseThrow(() -> Volumes.missing(volumeId));
    }

    /** Detaches the volume from the node, or from every node when none is named; idempotent. */
    public void detach(String volumeId, Optional<String> nodeId) {
        // a volume that is gone is attached nowhere
        volumes.update(volumeId, volume -> volume.withAttachments(volume.attachments().stream()
                .filter(a -> nodeId.isPresent() && !a.nodeId().equals(nodeId.get()))
                .toList()));
    }

    /** The IDs of the nodes the volume is published to. */
    public static List<String> nodeIds(Volume volume) {
        return volume.attachments().stream().map(Attachment::nodeId).toList();
    }
}
