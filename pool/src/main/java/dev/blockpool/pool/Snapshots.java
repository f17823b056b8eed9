package dev.blockpool.pool;

import dev.blockpool.common.StorageException;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Snapshots: {@code snapshots/<id>.img} (an immutable copy of a volume's image, independent of
 * the volume afterwards) and {@code snapshots/<id>.json}, committed like volumes.
 */
public final class Snapshots {

    private static final Logger log = LoggerFactory.getLogger(Snapshots.class);

    private final Path directory;
    private final MetadataStore<Snapshot> store;
    private final ImageFiles images;
    private final PoolSpace space;
    private final Clock clock;

    Snapshots(Path directory, ImageFiles images, PoolSpace space, Clock clock) {
        this.directory = directory;
        this.store = new MetadataStore<>(directory, Snapshot.class);
        this.images = images;
        this.space = space;
        this.clock = clock;
    }

    public Optional<Snapshot> find(String snapshotId) {
        return Ids.isSnapshotId(snapshotId) ? store.read(snapshotId) : Optional.empty();
    }

    public Path imagePath(String snapshotId) {
        if (!Ids.isSnapshotId(snapshotId)) {
            throw StorageException.notFound("snapshot %s does not exist", Ids.quote(snapshotId));
        }
        return directory.resolve(snapshotId + Volumes.IMAGE_SUFFIX);
    }

    public List<Snapshot> list() {
        return store.readAll().stream().filter(s -> Ids.isSnapshotId(s.id())).toList();
    }

    /**
     * Snapshots {@code source} under {@code name}, or returns the snapshot of that name when it
     * was taken before from the same volume (CreateSnapshot is idempotent on the name).
     */
    public Snapshot create(String name, Volume source, Path sourceImage) {
        String id = Ids.snapshotIdFor(name);
        Optional<Snapshot> existing = store.read(id);
        if (existing.isPresent()) {
            if (!existing.get().sourceVolumeId().equals(source.id())) {
                throw StorageException.conflict("snapshot %s already exists for another volume (%s)", name,
                        existing.get().sourceVolumeId());
            }
            return existing.get();
        }
        space.requireRoomFor(source.capacityBytes());
        ImageFiles.CopyMethod method = images.copy(sourceImage, imagePath(id));
        Snapshot snapshot = new Snapshot(id, name, source.id(), source.capacityBytes(), clock.instant());
        store.write(id, snapshot);
        log.info("created snapshot {} ({}) of volume {} by {}", id, name, source.id(), method);
        return snapshot;
    }

    public void delete(String snapshotId) {
        if (find(snapshotId).isEmpty()) {
            return;
        }
        store.delete(snapshotId);
        DurableFiles.delete(imagePath(snapshotId));
        log.info("deleted snapshot {}", snapshotId);
    }
}
