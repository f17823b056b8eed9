package dev.blockpool.pool;

import dev.blockpool.common.IoLimits;
import dev.blockpool.common.Quoting;
import dev.blockpool.common.StorageException;
import dev.blockpool.common.TestKillPoint;
import dev.blockpool.pool.records.DurableFiles;
import dev.blockpool.pool.records.Page;
import dev.blockpool.pool.records.RecordLock;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Clock;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The volumes of the pool: {@code volumes/<id>.img} and {@code volumes/<id>.json}, committed as
 * {@link ImageRecords} describes.
 *
 * <p>Callers serialise operations on one volume ID (the services' per-ID locks); this class does
 * no locking of its own.
 */
public final class Volumes {

    private static final Logger log = LoggerFactory.getLogger(Volumes.class);

    private final ImageRecords<Volume> records;
    private final ImageFiles images;
    private final PoolCapacity capacity;
    private final Snapshots snapshots;
    private final Clock clock;

    Volumes(
            Path directory,
            ImageFiles images,
            PoolCapacity capacity,
            Snapshots snapshots,
            Clock clock,
            RecordLock lock) {
        this.records = new ImageRecords<>("volume", Ids::isVolumeId, directory, RecordCodecs.VOLUME, capacity, lock);
        this.images = images;
        this.capacity = capacity;
        this.snapshots = snapshots;
        this.clock = clock;
    }

    /** The volume, or empty when the ID is unknown or could never have been issued by this driver. */
    public Optional<Volume> find(String volumeId) {
        return records.find(volumeId);
    }

    public Volume get(String volumeId) {
        return find(volumeId).orElseThrow(() -> missing(volumeId));
    }

    static StorageException missing(String volumeId) {
        return StorageException.notFound("volume %s does not exist", Quoting.quote(volumeId));
    }

    public Path imagePath(String volumeId) {
        return records.imagePath(volumeId);
    }

    ImageRecords<Volume> records() {
        return records;
    }

    /** All volumes, sorted by ID. */
    public List<Volume> list() {
        return records.list();
    }

    /** At most {@code max} volumes (0: all) from pool position {@code from} (0: the start); see {@link Page}. */
    public Page<Volume> page(long from, int max) {
        return records.page(from, max, id -> true, volume -> true);
    }

    /**
     * Creates the volume named {@code spec.name()}, or returns the existing one when it was
     * created before with compatible arguments (CreateVolume is idempotent on the name).
     */
    public Volume create(VolumeSpec spec) {
        return create(spec, () -> spec.source().map(this::resolve), Optional.empty());
    }

    /**
     * {@link #create(VolumeSpec)} of a volume whose data was pulled from another node's pool into
     * {@code imported} (of the source's size, on this pool's filesystem): the image is renamed into
     * place as the volume's, then grown or preallocated as a local copy would be, and the record
     * committed after it; {@code spec.source()} says what it was pulled from. Until the commit,
     * {@code imported}'s promise is the new image's. A crash before it leaves an image without its
     * record, which the reconcile removes; the pull then starts again.
     */
    public Volume createFromImport(VolumeSpec spec, Path imported) {
        if (spec.source().isEmpty()) {
            throw new IllegalArgumentException("an imported volume says what it was pulled from");
        }
        return create(
                spec,
                () -> Optional.of(new SourceImage(imported, PoolCapacity.sizeOf(imported), true)),
                Optional.of(imported));
    }

    /**
     * Makes {@code moved}, a volume of another node's pool that moves to this one, from the image
     * pulled of it into {@code imported}: the same ID and record (its attachments, which were the
     * other node's, aside), committed as {@link #createFromImport} commits. The volume as it is
     * when this move committed it before (the same name and creation time); CONFLICT when a volume
     * of that ID was made otherwise.
     */
    public Volume createMoved(Volume moved, Path imported) {
        Volume volume = moved.withAttachments(List.of());
        Optional<Volume> existing = records.find(volume.id());
        if (existing.isPresent()) {
            if (!existing.get().name().equals(volume.name())
                    || !existing.get().createdAt().equals(volume.createdAt())) {
                throw StorageException.conflict(
                        "volume %s exists in this pool already, created %s, not as the volume moved here (created %s)",
                        volume.id(), existing.get().createdAt(), volume.createdAt());
            }
            return existing.get();
        }
        SourceImage source = new SourceImage(imported, PoolCapacity.sizeOf(imported), true);
        records.create(
                volume.id(),
                volume.capacityBytes(),
                volume.allocation(),
                volume,
                Optional.of(imported),
                image -> copyFrom(source, image, volume.capacityBytes(), volume.allocation()));
        log.info(
                "created volume {} ({}, {} bytes), moved from another node",
                volume.id(),
                volume.name(),
                volume.capacityBytes());
        return volume;
    }

    private Volume create(VolumeSpec spec, Supplier<Optional<SourceImage>> sourceOf, Optional<Path> movedFrom) {
        String id = Ids.volumeIdFor(spec.name());
        Optional<Volume> existing = records.find(id);
        if (existing.isPresent()) {
            return requireCompatible(existing.get(), spec);
        }
        Optional<SourceImage> source = sourceOf.get();
        if (source.isPresent()) {
            requireFits(spec.source().get(), source.get().size(), spec.capacityBytes());
        }
        Volume volume = new Volume(
                id,
                spec.name(),
                spec.capacityBytes(),
                spec.fsType(),
                spec.allocation(),
                spec.accessTypes(),
                spec.parameters(),
                spec.source(),
                clock.instant(),
                List.of(),
                spec.ioLimits());
        records.create(id, spec.capacityBytes(), spec.allocation(), volume, movedFrom, image -> {
            if (source.isPresent()) {
                copyFrom(source.get(), image, spec.capacityBytes(), spec.allocation());
            } else {
                images.create(image, spec.capacityBytes(), spec.allocation());
            }
        });
        log.info(
                "created volume {} ({}, {} bytes{})",
                id,
                spec.name(),
                spec.capacityBytes(),
                spec.source()
                        .map(s -> ", from " + s.kind().name().toLowerCase() + " " + s.id())
                        .orElse(""));
        return volume;
    }

    /** Deletes the volume; an unknown one is already deleted. Refused while it is attached. */
    public void delete(String volumeId) {
        delete(volumeId, volume -> {});
    }

    /**
     * {@link #delete(String)}, refused also when {@code requireUnused} throws: what the pool does
     * not record of where the volume is in use. It is asked only of a volume that exists, so a
     * volume already deleted stays deleted whatever holds an image of its name.
     */
    public void delete(String volumeId, Consumer<Volume> requireUnused) {
        Optional<Volume> volume = find(volumeId);
        if (volume.isEmpty()) {
            return;
        }
        if (!volume.get().attachments().isEmpty()) {
            throw StorageException.precondition(
                    "volume %s is still published to node(s) %s; unpublish it first",
                    volumeId,
                    volume.get().attachments().stream().map(Attachment::nodeId).toList());
        }
        requireUnused.accept(volume.get());
        records.delete(volumeId);
        log.info("deleted volume {}", volumeId);
    }

    /** The volume as {@code change} makes it from its record as it is now; see {@link ImageRecords#update}. */
    Optional<Volume> update(String volumeId, UnaryOperator<Volume> change) {
        return records.update(volumeId, change);
    }

    /** Grows the image to {@code newCapacity}; a smaller or equal size leaves it as it is. */
    public Volume expand(String volumeId, long newCapacity) {
        Volume volume = get(volumeId);
        if (newCapacity <= volume.capacityBytes()) {
            return volume;
        }
        Path image = imagePath(volumeId);
        Volume grown = capacity.promising(image, newCapacity, volume.allocation(), "volume " + volumeId, () -> {
            images.grow(image, newCapacity, volume.allocation());
            DurableFiles.fsync(image); // the new size is on disk before the record says so
            TestKillPoint.reached("expand.image-grown");
            return update(volumeId, current -> current.withCapacity(newCapacity))
                    .orElseThrow(() -> missing(volumeId));
        });
        log.info("expanded volume {} to {} bytes", volumeId, newCapacity);
        return grown;
    }

    /**
     * Changes how the image's blocks are provided. To preallocated, every block is reserved now
     * (fallocate adds only the holes), flushed, and only then recorded, so a crash in between
     * leaves a sparse record that a retry completes; a pool that cannot hold them is no space
     * (blocks fallocate took before it ran out stay reserved). To sparse, the record changes:
     * the blocks already reserved stay, since only the filesystem inside knows which hold data,
     * and later growth is sparse.
     */
    public Volume changeAllocation(Volume volume, Allocation allocation) {
        if (volume.allocation() == allocation) {
            return volume;
        }
        if (allocation == Allocation.PREALLOCATED) {
            Path image = imagePath(volume.id());
            images.grow(image, volume.capacityBytes(), Allocation.PREALLOCATED);
            DurableFiles.fsync(image);
        }
        // Changed on the record as it is now: an attach made meanwhile, on any host, stays.
        Volume changed = update(volume.id(), current -> current.withAllocation(allocation))
                .orElseThrow(() -> missing(volume.id()));
        log.info("volume {} is now {}", volume.id(), allocation.name().toLowerCase());
        return changed;
    }

    /**
     * Records what the volume's pods' I/O is limited to from now on; the nodes that publish it
     * apply it. Changed on the record as it is now, as {@link #changeAllocation} is.
     */
    public Volume changeIoLimits(Volume volume, IoLimits limits) {
        if (volume.ioLimits().equals(limits)) {
            return volume;
        }
        Volume changed =
                update(volume.id(), current -> current.withIoLimits(limits)).orElseThrow(() -> missing(volume.id()));
        log.info("volume {} I/O limits are now: {}", volume.id(), limits);
        return changed;
    }

    /** OUT_OF_RANGE when a restore or clone of {@code sourceBytes} asks for fewer: an image never shrinks. */
    public static void requireFits(ContentSource source, long sourceBytes, long requestedBytes) {
        if (sourceBytes > requestedBytes) {
            throw StorageException.outOfRange(
                    "the source %s is %d bytes, larger than the requested %d bytes",
                    source.id(), sourceBytes, requestedBytes);
        }
    }

    /** Whether the snapshot or volume to copy from is in this pool. */
    public boolean holds(ContentSource source) {
        return source.kind() == ContentSource.Kind.SNAPSHOT
                ? snapshots.find(source.id()).isPresent()
                : find(source.id()).isPresent();
    }

    /** The size of a snapshot or volume to copy from; NOT_FOUND when it does not exist. */
    public long sourceSize(ContentSource source) {
        return resolve(source).size();
    }

    /** What a volume is made from: an image of this pool to copy, or one pulled from another node's to move. */
    private record SourceImage(Path image, long size, boolean moved) {}

    private SourceImage resolve(ContentSource source) {
        if (source.kind() == ContentSource.Kind.SNAPSHOT) {
            Snapshot snapshot = snapshots
                    .find(source.id())
                    .orElseThrow(() ->
                            StorageException.notFound("source snapshot %s does not exist", Quoting.quote(source.id())));
            return new SourceImage(snapshots.imagePath(snapshot.id()), snapshot.sizeBytes(), false);
        }
        Volume sourceVolume = find(source.id())
                .orElseThrow(
                        () -> StorageException.notFound("source volume %s does not exist", Quoting.quote(source.id())));
        return new SourceImage(imagePath(sourceVolume.id()), sourceVolume.capacityBytes(), false);
    }

    private void copyFrom(SourceImage source, Path image, long capacityBytes, Allocation allocation) {
        if (source.moved()) {
            move(source.image(), image);
        } else {
            ImageFiles.CopyMethod method = images.copy(source.image(), image);
            log.debug("copied {} to {} by {}", source.image(), image, method);
        }
        // grow also preallocates: a copy of a sparse source keeps its holes otherwise
        if (source.size() < capacityBytes || allocation == Allocation.PREALLOCATED) {
            try {
                images.grow(image, capacityBytes, allocation);
            } catch (RuntimeException failure) {
                if (source.moved()) {
                    move(image, source.image()); // the pulled data stays for the retry, rather than go with the undo
                }
                throw failure;
            }
        }
    }

    private static void move(Path from, Path to) {
        try {
            Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw StorageException.io(e, "cannot move %s to %s", from, to);
        }
    }

    private static Volume requireCompatible(Volume existing, VolumeSpec spec) {
        boolean same = spec.accepts(existing.capacityBytes())
                && existing.fsType().equals(spec.fsType())
                // not the allocation nor the I/O limits: ControllerModifyVolume may have changed them since
                && existing.accessTypes().equals(spec.accessTypes())
                && Objects.equals(existing.source(), spec.source())
                && existing.parameters().equals(spec.parameters());
        if (!same) {
            throw StorageException.conflict(
                    "volume %s already exists with other arguments (%d bytes, fsType %s, source %s)",
                    spec.name(),
                    existing.capacityBytes(),
                    existing.fsType(),
                    existing.source().map(ContentSource::id).orElse("none"));
        }
        return existing;
    }
}
