package dev.blockpool.pool;

import java.time.Instant;
import java.util.List;

/**
 * A group snapshot's record, {@code groups/<id>.json}: the commit point of the member snapshots
 * it lists (ordinary snapshots, in the order of their source volumes), written after all of them.
 */
public record GroupSnapshot(
        String id, String name, List<String> sourceVolumeIds, List<String> snapshotIds, Instant createdAt) {

    public GroupSnapshot {
        sourceVolumeIds = List.copyOf(sourceVolumeIds);
        snapshotIds = List.copyOf(snapshotIds);
    }
}
