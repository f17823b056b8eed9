package dev.blockpool.pool;

import java.time.Instant;
import java.util.Optional;

/**
 * A snapshot's record, stored in {@code snapshots/<id>.json}: an immutable copy of a volume's
 * image, and the group snapshot it was taken in, if any.
 */
public record Snapshot(
        String id,
        String name,
        String sourceVolumeId,
        long sizeBytes,
        Instant createdAt,
        Optional<String> groupSnapshotId) {

    public Snapshot {
        groupSnapshotId = groupSnapshotId == null ? Optional.empty() : groupSnapshotId;
    }

    public Snapshot(String id, String name, String sourceVolumeId, long sizeBytes, Instant createdAt) {
        this(id, name, sourceVolumeId, sizeBytes, createdAt, Optional.empty());
    }
}
