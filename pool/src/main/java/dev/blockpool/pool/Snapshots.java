package dev.blockpool.pool;

import dev.blockpool.common.StorageException;
import dev.blockpool.pool.records.Page;
import dev.blockpool.pool.records.RecordLock;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Snapshots: {@code snapshots/<id>.img} (an immutable copy of a volume's image, independent of
 * the volume afterwards) and {@code snapshots/<id>.json}, committed like volumes.
 *
 * <p>Callers serialise operations on one snapshot ID; this class does no locking of its own.
 */
public final class Snapshots {

    private static final Logger log = LoggerFactory.getLogger(Snapshots.class);

    private final ImageRecords<Snapshot> records;
    private final ImageFiles images;
    private final Clock clock;

    Snapshots(Path directory, ImageFiles images, PoolCapacity capacity, Clock clock, RecordLock lock) {
        this.records =
                new ImageRecords<>("snapshot", Ids::isSnapshotId, directory, RecordCodecs.SNAPSHOT, capacity, lock);
        this.images = images;
        this.clock = clock;
    }

    public Optional<Snapshot> find(String snapshotId) {
        return records.find(snapshotId);
    }

    public Path imagePath(String snapshotId) {
        return records.imagePath(snapshotId);
    }

    public List<Snapshot> list() {
        return records.list();
    }

    /**
     * At most {@code max} snapshots (0: all) from pool position {@code from} (0: the start; see
     * {@link Page}): only the one of {@code snapshotId} and only those of {@code sourceVolumeId}, when given.
     */
    public Page<Snapshot> page(long from, int max, Optional<String> snapshotId, Optional<String> sourceVolumeId) {
        return records.page(
                from,
                max,
                id -> snapshotId.isEmpty() || snapshotId.get().equals(id),
                snapshot -> sourceVolumeId.isEmpty() || sourceVolumeId.get().equals(snapshot.sourceVolumeId()));
    }

    /**
     * CreateSnapshot: snapshots the volume {@code sourceVolumeId} of {@code volumes} under
     * {@code name}, or returns the snapshot of that name when it was taken before from the same
     * volume, even once that volume is deleted (idempotent on the name). The snapshot's record is
     * read once: NOT_FOUND when there is neither it nor the volume, CONFLICT when it is another
     * volume's.
     */
    public Snapshot create(String name, String sourceVolumeId, Volumes volumes) {
        Optional<Snapshot> existing = records.find(Ids.snapshotIdFor(name));
        if (existing.isPresent() && existing.get().sourceVolumeId().equals(sourceVolumeId)) {
            return existing.get();
        }
        Volume source = volumes.get(sourceVolumeId);
        return create(name, source, volumes.imagePath(sourceVolumeId), Optional.empty(), existing);
    }

    /**
     * Snapshots {@code source} under {@code name}, or returns the snapshot of that name when it
     * was taken before from the same volume (CreateSnapshot is idempotent on the name).
     */
    public Snapshot create(String name, Volume source, Path sourceImage) {
        return create(name, source, sourceImage, Optional.empty());
    }

    /** {@link #create(String, Volume, Path)} of a member of the group {@code groupId}. */
    Snapshot create(String name, Volume source, Path sourceImage, Optional<String> groupId) {
        return create(name, source, sourceImage, groupId, records.find(Ids.snapshotIdFor(name)));
    }

    /** {@link #create(String, Volume, Path, Optional)} where {@code existing} is the record of the name as read. */
    private Snapshot create(
            String name, Volume source, Path sourceImage, Optional<String> groupId, Optional<Snapshot> existing) {
        String id = Ids.snapshotIdFor(name);
        if (existing.isPresent()) {
            if (!existing.get().sourceVolumeId().equals(source.id())) {
                throw StorageException.conflict(
                        "snapshot %s already exists for another volume (%s)",
                        name, existing.get().sourceVolumeId());
            }
            return existing.get();
        }
        Snapshot snapshot = new Snapshot(id, name, source.id(), source.capacityBytes(), clock.instant(), groupId);
        AtomicReference<ImageFiles.CopyMethod> method = new AtomicReference<>();
        // A snapshot promises the blocks it holds: those it shares with its volume become its own when rewritten.
        // Counted as taken at once: a copy where the filesystem cannot share extents takes them.
        long holds = PoolCapacity.allocatedBytes(sourceImage);
        records.create(
                id, holds, Allocation.PREALLOCATED, snapshot, image -> method.set(images.copy(sourceImage, image)));
        log.info("created snapshot {} ({}) of volume {} by {}", id, name, source.id(), method.get());
        return snapshot;
    }

    /** Deletes the snapshot; INVALID while it belongs to a group snapshot, which must be deleted instead. */
    public void deleteAlone(String snapshotId, GroupSnapshots groups) {
        Optional<Snapshot> snapshot = find(snapshotId);
        if (snapshot.isPresent()) {
            groups.requireStandalone(snapshot.get());
            delete(snapshotId);
        }
    }

    void delete(String snapshotId) {
        if (find(snapshotId).isPresent()) {
            records.delete(snapshotId);
            log.info("deleted snapshot {}", snapshotId);
        }
    }
}
