package dev.blockpool.pool;

import dev.blockpool.common.Quoting;
import dev.blockpool.common.StorageException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.locks.ReentrantLock;

/**
 * ControllerPublish and ControllerUnpublish on the pool: durable attachment records in the
 * volume's metadata, single-node access and each node's attach limit enforced.
 */
public final class Attachments {

    private final Volumes volumes;
    private final Nodes nodes;
    /** Counting a node's attachments and adding one must not interleave with another attach. */
    private final ReentrantLock attachLock = new ReentrantLock();

    Attachments(Volumes volumes, Nodes nodes) {
        this.volumes = volumes;
        this.nodes = nodes;
    }

    /**
     * Attaches the volume to the node, or confirms an identical existing attachment.
     *
     * @param singleNode whether the access mode allows only one node at a time
     */
    public Volume attach(String volumeId, String nodeId, boolean readonly, boolean singleNode) {
        Volume volume = volumes.get(volumeId);
        NodeRecord node = nodes.find(nodeId).orElseThrow(() ->
                StorageException.notFound("node %s is not registered with the pool", Quoting.quote(nodeId)));
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
        attachLock.lock();
        try {
            long attached = volumes.list().stream().filter(v -> v.attachmentOn(nodeId).isPresent()).count();
            if (attached >= node.maxVolumesPerNode()) {
                throw StorageException.limitReached("node %s already has %d volumes attached, its limit", nodeId,
                        attached);
            }
            List<Attachment> attachments = new ArrayList<>(volume.attachments());
            attachments.add(new Attachment(nodeId, readonly, !singleNode));
            return volumes.saveAttachments(volume, attachments);
        } finally {
            attachLock.unlock();
        }
    }

    /** Detaches the volume from the node, or from every node when none is named; idempotent. */
    public void detach(String volumeId, Optional<String> nodeId) {
        Optional<Volume> volume = volumes.find(volumeId);
        if (volume.isEmpty()) {
            return; // a volume that is gone is attached nowhere
        }
        List<Attachment> remaining = volume.get().attachments().stream()
                .filter(a -> nodeId.isPresent() && !a.nodeId().equals(nodeId.get()))
                .toList();
        if (remaining.size() != volume.get().attachments().size()) {
            volumes.saveAttachments(volume.get(), remaining);
        }
    }

    /** The IDs of the nodes the volume is published to. */
    public static List<String> nodeIds(Volume volume) {
        return volume.attachments().stream().map(Attachment::nodeId).toList();
    }
}
