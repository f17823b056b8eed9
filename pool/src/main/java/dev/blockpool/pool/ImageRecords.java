package dev.blockpool.pool;

import dev.blockpool.common.GrowthMarker;
import dev.blockpool.common.Quoting;
import dev.blockpool.common.StorageException;
import dev.blockpool.pool.records.DurableFiles;
import dev.blockpool.pool.records.Page;
import dev.blockpool.pool.records.RecordCodec;
import dev.blockpool.pool.records.RecordLock;
import dev.blockpool.pool.records.RecordStore;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records that each own an image: {@code <id>.img} beside {@code <id>.json} in one directory.
 * The record file is the commit point: it is put in place after the image is complete and
 * flushed, and removed before the image is, so an image without its record is always unfinished
 * work that the reconcile (or a retry of the same create) may remove. Every record type with an
 * image goes through here, so none can get that order wrong.
 *
 * <p>Callers serialise operations on one ID (the services' per-ID locks); this class does no
 * locking of its own.
 */
final class ImageRecords<T> {

    static final String IMAGE_SUFFIX = ".img";
    static final String RECORD_SUFFIX = RecordStore.SUFFIX;

    private static final Logger log = LoggerFactory.getLogger(ImageRecords.class);

    private final String kind;
    private final Predicate<String> isId;
    private final Path directory;
    private final RecordStore<T> store;
    private final PoolCapacity capacity;
    private final RecordLock lock;

    /**
     * @param kind what a record is called in messages ("volume", "snapshot")
     * @param isId which IDs this driver could have issued; no other ID ever reaches a path
     */
    ImageRecords(
            String kind,
            Predicate<String> isId,
            Path directory,
            RecordCodec<T> codec,
            PoolCapacity capacity,
            RecordLock lock) {
        this.kind = kind;
        this.isId = isId;
        this.directory = directory;
        this.store = new RecordStore<>(directory, codec);
        this.capacity = capacity;
        this.lock = lock;
    }

    Path imagePath(String id) {
        if (!isId.test(id)) {
            throw StorageException.notFound("%s %s does not exist", kind, Quoting.quote(id));
        }
        return directory.resolve(id + IMAGE_SUFFIX);
    }

    /** The committed record; empty when there is none or the ID could never have been issued. */
    Optional<T> find(String id) {
        return isId.test(id) ? store.read(id) : Optional.empty();
    }

    /** Every readable committed record, sorted by ID. */
    List<T> list() {
        return store.all(isId, record -> true);
    }

    /** A page of the committed records whose ID and record pass the filters; see {@link RecordStore#page}. */
    Page<T> page(long from, int max, Predicate<String> idFilter, Predicate<T> filter) {
        return store.page(isId.and(idFilter), from, max, filter);
    }

    /** A page of what {@code load} makes of each ID; see {@link RecordStore#pageOf}. */
    <R> Page<R> pageOf(long from, int max, Function<String, Optional<R>> load) {
        return store.pageOf(isId, from, max, load);
    }

    /**
     * Commits a new record: makes its image with {@code makeImage}, then writes its record. A
     * leftover image of an earlier attempt at this ID that never committed is removed first, so
     * that its space counts as free. When making the image or writing the record fails, what
     * this create made is removed again before the failure is rethrown.
     *
     * @param bytes what the new image promises; see {@link PoolCapacity}
     * @param allocation whether {@code makeImage} takes the image's blocks at once
     */
    T create(String id, long bytes, Allocation allocation, T record, Consumer<Path> makeImage) {
        return create(id, bytes, allocation, record, Optional.empty(), makeImage);
    }

    /**
     * {@link #create(String, long, Allocation, Object, Consumer)} where {@code makeImage} moves the
     * image at {@code movedFrom} into place: its promise becomes the new image's.
     */
    T create(
            String id,
            long bytes,
            Allocation allocation,
            T record,
            Optional<Path> movedFrom,
            Consumer<Path> makeImage) {
        Path image = imagePath(id);
        if (store.exists(id)) {
            // Never reached through find-then-create; it guards an existing record's image all the same.
            throw StorageException.conflict("%s %s already exists", kind, id);
        }
        if (DurableFiles.delete(image)) {
            log.info("removed the image an unfinished create of {} {} left", kind, id);
        }
        return capacity.promising(image, movedFrom, bytes, allocation, kind + " " + id, () -> {
            try {
                makeImage.accept(image);
                commit(id, record, image);
                return record;
            } catch (RuntimeException failure) {
                undoCreate(id, failure);
                throw failure;
            }
        });
    }

    /**
     * Flushes the new record to its temporary file, then the image (once, however many steps
     * made it), and only then renames the record into place. The rename is the commit, and it
     * comes after both flushes have returned, so after a crash at any point the record is either
     * absent (the image and the temporary file are unfinished work, which a retry or the
     * reconcile removes) or in place with its image durable, as when the image was flushed
     * first. Flushing the record first costs the filesystem one commit less: on XFS its fsync
     * forces the log that holds the copy's extents too, so the image's fsync finds nothing left
     * to log and only flushes the device's cache.
     */
    private void commit(String id, T record, Path image) {
        DurableFiles.Prepared prepared = store.prepare(id, record);
        try {
            DurableFiles.fsync(image);
        } catch (RuntimeException failure) {
            prepared.discard();
            throw failure;
        }
        prepared.publish();
    }

    /**
     * Rewrites a committed record (its image stays as it is) with what
     * {@code change} makes of it as it is now: read and written under the pool's {@link RecordLock},
     * so a change another process makes meanwhile is never overwritten. Empty when there is no
     * such record; nothing is written when {@code change} leaves it as it was.
     */
    Optional<T> update(String id, UnaryOperator<T> change) {
        if (!isId.test(id)) {
            return Optional.empty();
        }
        return lock.locked(() -> {
            Optional<T> current = find(id);
            if (current.isEmpty()) {
                return current;
            }
            T changed = change.apply(current.get());
            if (!changed.equals(current.get())) {
                capacity.changing(imagePath(id), () -> {
                    store.write(id, changed);
                    return changed;
                });
            }
            return Optional.of(changed);
        });
    }

    /**
     * Removes the record, then the image: a crash in between leaves an image without its record,
     * which the reconcile removes. The image's growth mark goes first: one left by a crash is
     * removed by the reconcile once the image is gone. An unknown ID is already deleted.
     */
    void delete(String id) {
        if (isId.test(id)) {
            capacity.changing(imagePath(id), () -> {
                DurableFiles.delete(GrowthMarker.beside(imagePath(id)));
                store.delete(id);
                return DurableFiles.delete(imagePath(id));
            });
        }
    }

    private void undoCreate(String id, RuntimeException failure) {
        try {
            delete(id);
        } catch (StorageException cleanup) {
            failure.addSuppressed(cleanup);
            log.error(
                    "cannot remove what the failed create of {} {} left ({}); the reconcile will",
                    kind,
                    id,
                    cleanup.getMessage());
        }
    }
}
