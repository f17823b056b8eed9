package dev.blockpool.pool;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.Quoting;
import dev.blockpool.common.StorageException;
import dev.blockpool.pool.extents.SnapshotRanges;
import java.nio.file.Path;

/**
 * Changed block tracking from the pool's own knowledge of its images: the ranges of a snapshot
 * that hold data, and the ranges in which one snapshot differs from an earlier one of the same
 * volume, found from the filesystem's map of the images' extents rather than by reading them
 * (see {@code dev.blockpool.pool.extents}). Snapshot images never change once committed, and an open
 * image outlives a delete of its snapshot, so a stream needs no lock.
 */
public final class SnapshotMetadata {

    /**
     * Threads for the streams' steps, apart from those of the node's calls (stage, publish, a
     * thaw): any number of streams at once never delays those, and a pool that hangs holds at
     * most this many threads of streams.
     */
    static final int STEP_THREADS = 8;

    private final Snapshots snapshots;
    private final BlockingCalls steps;

    SnapshotMetadata(Snapshots snapshots) {
        this.snapshots = snapshots;
        this.steps = new BlockingCalls("snapshot-metadata", STEP_THREADS);
    }

    /** The data ranges of the snapshot {@code snapshotId} from {@code from}. */
    public SnapshotRanges allocated(String snapshotId, long from) {
        Snapshot snapshot = find(snapshotId);
        requireWithin(from, snapshot);
        return SnapshotRanges.allocated(
                imageOf(snapshot),
                ownerOf(snapshot),
                from,
                snapshot.sizeBytes(),
                steps,
                "reading the data ranges of snapshot " + snapshotId);
    }

    /**
     * The ranges in which the snapshot {@code targetId} differs from {@code baseId}, an earlier
     * snapshot of the same volume, from {@code from}. A volume that grew between the two reads
     * zeros in the base beyond its size then.
     */
    public SnapshotRanges delta(String baseId, String targetId, long from) {
        Snapshot base = find(baseId);
        Snapshot target = find(targetId);
        if (!base.sourceVolumeId().equals(target.sourceVolumeId())) {
            throw StorageException.invalid(
                    "snapshots %s and %s are of different volumes (%s and %s): a delta is between two snapshots of one volume",
                    baseId, targetId, base.sourceVolumeId(), target.sourceVolumeId());
        }
        if (target.createdAt().isBefore(base.createdAt())) {
            throw StorageException.invalid(
                    "the target snapshot %s was taken before the base snapshot %s: swap them", targetId, baseId);
        }
        requireWithin(from, target);
        return SnapshotRanges.delta(
                imageOf(base),
                ownerOf(base),
                imageOf(target),
                ownerOf(target),
                from,
                target.sizeBytes(),
                steps,
                "comparing the extents of snapshots " + baseId + " and " + targetId);
    }

    private Snapshot find(String snapshotId) {
        return snapshots
                .find(snapshotId)
                .orElseThrow(() -> StorageException.notFound("snapshot %s does not exist", Quoting.quote(snapshotId)));
    }

    private static void requireWithin(long from, Snapshot snapshot) {
        if (from < 0 || from > snapshot.sizeBytes()) {
            throw StorageException.outOfRange(
                    "starting offset %d is outside snapshot %s, which holds %d bytes: give an offset from 0 to %d",
                    from, snapshot.id(), snapshot.sizeBytes(), snapshot.sizeBytes());
        }
    }

    private Path imageOf(Snapshot snapshot) {
        return snapshots.imagePath(snapshot.id());
    }

    private static String ownerOf(Snapshot snapshot) {
        return "snapshot " + snapshot.id();
    }
}
