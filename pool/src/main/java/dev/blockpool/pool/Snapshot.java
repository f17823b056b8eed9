package dev.blockpool.pool;

import java.time.Instant;

/** A snapshot's metadata, stored in {@code snapshots/<id>.json}: an immutable copy of a volume's image. */
public record Snapshot(String id, String name, String sourceVolumeId, long sizeBytes, Instant createdAt) {
}
