package dev.blockpool.pool.transfer;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.StorageException;
import dev.blockpool.pool.Allocation;
import dev.blockpool.pool.ContentSource;
import dev.blockpool.pool.ImageFiles;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.PoolCapacity;
import dev.blockpool.pool.Snapshot;
import dev.blockpool.pool.Volume;
import dev.blockpool.pool.records.DurableFiles;
import dev.blockpool.pool.records.RecordStore;
import dev.blockpool.pool.transfer.TransferRecords.Export;
import dev.blockpool.pool.transfer.TransferRecords.Frozen;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Clock;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This pool's side of transfers ({@link ImageExports}). A snapshot is served from its own image,
 * which never changes. A volume is served from a copy frozen at its transfer's first open
 * ({@code outgoing/<transfer-id>.<round>.img}, a reflink where the filesystem shares extents,
 * else a sparse copy), named by the transfer's record ({@code outgoing/<transfer-id>.json}). A
 * later open on the basis of that copy's identity begins the next round: a new copy is frozen and
 * the one before is kept as the basis, so the pull receives only what changed since. The record
 * is rewritten only once the copies it names are complete, so no crash leaves it naming a torn
 * one. The reconcile removes the files of a transfer no pull has used for a day.
 */
public final class PoolImageExports implements ImageExports {

    private static final Logger log = LoggerFactory.getLogger(PoolImageExports.class);
    /** A freeze that is a sparse copy of a large, mostly written volume can take a while. */
    static final Duration FREEZE_DEADLINE = Duration.ofHours(1);
    /** Threads for the exports' calls on the pool, apart from those of the node's own calls. */
    static final int THREADS = 4;

    private final Pool pool;
    private final Path directory;
    private final RecordStore<Export> records;
    private final BlockingCalls blocking;
    private final Clock clock;
    /** One open or release of a transfer at a time: two opens of one transfer freeze once. */
    private final ConcurrentHashMap<String, ReentrantLock> transfers = new ConcurrentHashMap<>();

    public PoolImageExports(Pool pool, Clock clock) {
        this(pool, clock, new BlockingCalls("transfer-export", THREADS));
    }

    PoolImageExports(Pool pool, Clock clock, BlockingCalls blocking) {
        this.pool = pool;
        this.directory = pool.root().resolve("outgoing");
        this.records = new RecordStore<>(directory, TransferRecords.EXPORT);
        this.blocking = blocking;
        this.clock = clock;
    }

    @Override
    public Optional<Long> find(ContentSource source) {
        TransferIds.requireSource(source);
        return source.kind() == ContentSource.Kind.SNAPSHOT
                ? pool.snapshots().find(source.id()).map(Snapshot::sizeBytes)
                : pool.volumes().find(source.id()).map(Volume::capacityBytes);
    }

    @Override
    public Optional<Volume> volume(String volumeId) {
        return pool.volumes().find(volumeId);
    }

    @Override
    public ImageReader open(ContentSource source, String transferId, Optional<String> basis) {
        TransferIds.requireSource(source);
        TransferIds.require(transferId);
        if (source.kind() == ContentSource.Kind.SNAPSHOT) {
            Snapshot snapshot = pool.snapshots()
                    .find(source.id())
                    .orElseThrow(() -> StorageException.notFound("%s does not exist", TransferIds.describe(source)));
            Path image = pool.snapshots().imagePath(snapshot.id());
            String identity = blocking.call(
                    ExportedImage.CALL_DEADLINE,
                    "reading the identity of " + image,
                    () -> ImageIdentity.of(source, image));
            return new ExportedImage(
                    image,
                    snapshot.sizeBytes(),
                    identity,
                    Optional.empty(),
                    TransferIds.describe(source),
                    blocking,
                    () -> {});
        }
        // Every file the open touches, the freeze's copy included, in one call on the exports' own threads.
        return locked(
                transferId,
                () -> blocking.call(
                        FREEZE_DEADLINE,
                        "opening " + TransferIds.describe(source) + " for transfer " + transferId,
                        () -> openVolume(source, transferId, basis)));
    }

    /** The volume's frozen copy for the transfer: the current round's, or a new round's when the basis is it. */
    private ImageReader openVolume(ContentSource source, String transferId, Optional<String> basis) {
        Optional<Export> recorded = records.read(transferId);
        if (recorded.isPresent() && !recorded.get().source().equals(source)) {
            throw StorageException.conflict(
                    "transfer %s exports %s, not %s",
                    transferId, TransferIds.describe(recorded.get().source()), TransferIds.describe(source));
        }
        Export export;
        if (recorded.isEmpty()) {
            export = new Export(source, freeze(source, transferId, 1), Optional.empty());
        } else if (basis.isPresent()
                && basis.get().equals(recorded.get().current().identity())) {
            Frozen before = recorded.get().current();
            export = new Export(source, freeze(source, transferId, before.round() + 1), Optional.of(before));
        } else {
            export = recorded.get();
        }
        if (!export.equals(recorded.orElse(null))) {
            records.write(transferId, export);
        }
        removeUnnamed(transferId, export);
        Runnable used = () -> touch(transferId);
        used.run();
        String what = TransferIds.describe(source) + " as frozen for transfer " + transferId;
        Optional<ExportedImage.Basis> basisImage = export.basis()
                .filter(kept -> basis.equals(Optional.of(kept.identity())))
                .map(kept -> new ExportedImage.Basis(frozenImage(transferId, kept), kept.identity()));
        return new ExportedImage(
                frozenImage(transferId, export.current()),
                export.current().sizeBytes(),
                export.current().identity(),
                basisImage,
                what,
                blocking,
                used);
    }

    /**
     * Copies the volume's image as it is now into the round's file, flushed before any record names
     * it. The copy promises the blocks it holds, as a snapshot: counted as taken at once, which a
     * sparse copy does.
     */
    private Frozen freeze(ContentSource source, String transferId, long round) {
        Volume volume = pool.volumes()
                .find(source.id())
                .orElseThrow(() -> StorageException.notFound("%s does not exist", TransferIds.describe(source)));
        Path target = directory.resolve(transferId + "." + round + ".img");
        Path image = pool.volumes().imagePath(volume.id());
        String what = TransferIds.describe(source) + " frozen for transfer " + transferId;
        long holds = PoolCapacity.allocatedBytes(image);
        return pool.capacity().promising(target, holds, Allocation.PREALLOCATED, "the copy of " + what, () -> {
            ImageFiles.CopyMethod method = pool.images().copy(image, target);
            DurableFiles.fsync(target);
            long size = sizeOf(target);
            log.info("froze {} (round {}, {} bytes) by {}", what, round, size, method);
            return new Frozen(round, size, ImageIdentity.of(source, target));
        });
    }

    @Override
    public void release(String transferId) {
        TransferIds.require(transferId);
        locked(transferId, () -> {
            records.delete(transferId);
            removeUnnamed(transferId, null);
            log.info("released transfer {}", transferId);
            return null;
        });
    }

    /** Removes the transfer's copies that {@code export} does not name (every one when null). */
    private void removeUnnamed(String transferId, Export export) {
        try (DirectoryStream<Path> files = Files.newDirectoryStream(directory, transferId + ".*.img")) {
            for (Path file : files) {
                boolean named = export != null
                        && (file.equals(frozenImage(transferId, export.current()))
                                || export.basis()
                                        .map(kept -> file.equals(frozenImage(transferId, kept)))
                                        .orElse(false));
                if (!named) {
                    pool.capacity().changing(file, () -> DurableFiles.delete(file));
                }
            }
        } catch (IOException e) {
            throw StorageException.io(e, "cannot list the copies of transfer %s in %s", transferId, directory);
        }
    }

    /** Marks the transfer used now: the reconcile removes only those no pull has used for a day. */
    private void touch(String transferId) {
        Path record = directory.resolve(transferId + RecordStore.SUFFIX);
        try {
            Files.setLastModifiedTime(record, FileTime.from(clock.instant()));
        } catch (IOException e) {
            log.debug("cannot mark transfer {} used: {}", transferId, e.getMessage());
        }
    }

    private Path frozenImage(String transferId, Frozen frozen) {
        return directory.resolve(transferId + "." + frozen.round() + ".img");
    }

    private static long sizeOf(Path file) {
        try {
            return Files.size(file);
        } catch (IOException e) {
            throw StorageException.io(e, "cannot read the size of %s", file);
        }
    }

    private <T> T locked(String transferId, Supplier<T> work) {
        ReentrantLock lock = transfers.computeIfAbsent(transferId, id -> new ReentrantLock());
        lock.lock();
        try {
            return work.get();
        } finally {
            lock.unlock();
        }
    }
}
