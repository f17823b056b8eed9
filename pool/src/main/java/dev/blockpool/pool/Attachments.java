package dev.blockpool.pool;

import dev.blockpool.common.Quoting;
import dev.blockpool.common.StorageException;
import dev.blockpool.pool.records.RecordLock;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * ControllerPublish and ControllerUnpublish on the pool: durable attachment records in the
 * volume's record, single-node access and each node's attach limit enforced.
 */
public final class Attachments {

    private final Volumes volumes;
    private final Nodes nodes;
    private final RecordLock lock;
    private final AttachmentIndex index;

    Attachments(Volumes volumes, Nodes nodes, RecordLock lock, AttachmentIndex index) {
        this.volumes = volumes;
        this.nodes = nodes;
        this.lock = lock;
        this.index = index;
    }

    /**
     * Attaches the volume to the node, or confirms an identical existing attachment. Every check
     * and the write rest on one reading of the pool under its {@link RecordLock}, so neither the
     * single-node rule nor the node's limit can be passed by an attach in another process.
     *
     * @param sharing whether the access mode allows only one node at a time
     */
    public Volume attach(String volumeId, String nodeId, Attachment.Access access, Attachment.Sharing sharing) {
        NodeRecord node = nodes.find(nodeId)
                .orElseThrow(() ->
                        StorageException.notFound("node %s is not registered with the pool", Quoting.quote(nodeId)));
        return lock.locked(() -> volumes.update(volumeId, volume -> {
                    Optional<Attachment> existing = volume.attachmentOn(nodeId);
                    if (existing.isPresent()) {
                        if (existing.get().access() != access || existing.get().sharing() != sharing) {
                            throw StorageException.conflict(
                                    "volume %s is already published to node %s with readonly=%s and a %s access mode",
                                    volumeId,
                                    nodeId,
                                    existing.get().readonly(),
                                    existing.get().multiNode() ? "multi-node" : "single-node");
                        }
                        return volume;
                    }
                    // Another node may join only when both its access mode and every existing attachment's allow it.
                    Optional<Attachment> exclusive = volume.attachments().stream()
                            .filter(a -> sharing == Attachment.Sharing.SINGLE_NODE || !a.multiNode())
                            .findFirst();
                    if (exclusive.isPresent()) {
                        throw StorageException.precondition(
                                "volume %s is already published to node %s and a single-node access mode keeps other nodes out",
                                volumeId, exclusive.get().nodeId());
                    }
                    long attached = attachedCount(nodeId, volumeId, node.maxVolumesPerNode());
                    if (attached >= node.maxVolumesPerNode()) {
                        throw StorageException.limitReached(
                                "node %s already has %d volumes attached, its limit", nodeId, attached);
                    }
                    List<Attachment> attachments = new ArrayList<>(volume.attachments());
                    attachments.add(new Attachment(nodeId, access, sharing));
                    index.add(nodeId, volumeId); // before the record says attached: see AttachmentIndex
                    return volume.withAttachments(attachments);
                }))
                .orElseThrow(() -> Volumes.missing(volumeId));
    }

    /**
     * How many volumes other than {@code volumeId} the node has attached, from its markers. Only
     * at the limit are the markers checked against the records: a crash can leave a marker whose
     * record never said attached, and it must not refuse an attach; a record that cannot be read
     * keeps counting.
     */
    private long attachedCount(String nodeId, String volumeId, long limit) {
        Set<String> marked = index.markedOn(nodeId).orElseGet(() -> {
            index.rebuild(volumes.list());
            return index.markedOn(nodeId).orElseThrow();
        });
        Set<String> others = new HashSet<>(marked);
        others.remove(volumeId);
        if (others.size() < limit) {
            return others.size();
        }
        long confirmed = 0;
        for (String other : others) {
            Optional<Volume> record;
            try {
                record = volumes.find(other);
            } catch (StorageException unreadable) {
                confirmed++;
                continue;
            }
            if (record.isPresent() && record.get().attachmentOn(nodeId).isPresent()) {
                confirmed++;
            } else {
                index.remove(nodeId, other);
            }
        }
        return confirmed;
    }

    /** Detaches the volume from the node, or from every node when none is named; idempotent. */
    public void detach(String volumeId, Optional<String> nodeId) {
        lock.locked(() -> {
            Set<String> detached = new HashSet<>();
            nodeId.ifPresent(detached::add); // also a marker an interrupted attach left
            // a volume that is gone is attached nowhere
            volumes.update(volumeId, volume -> {
                volume.attachments().stream()
                        .map(Attachment::nodeId)
                        .filter(n -> nodeId.isEmpty() || n.equals(nodeId.get()))
                        .forEach(detached::add);
                return volume.withAttachments(volume.attachments().stream()
                        .filter(a -> nodeId.isPresent() && !a.nodeId().equals(nodeId.get()))
                        .toList());
            });
            detached.forEach(node -> index.remove(node, volumeId)); // after the record says detached
            return null;
        });
    }

    /** Makes the attachment index match the volume records again (the reconcile). */
    public void reindex() {
        lock.locked(() -> {
            index.rebuild(volumes.list());
            return null;
        });
    }

    /** The IDs of the nodes the volume is published to. */
    public static List<String> nodeIds(Volume volume) {
        return volume.attachments().stream().map(Attachment::nodeId).toList();
    }
}
