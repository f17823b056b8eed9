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
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Clock;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
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
 *
 * <p>A freeze belongs to its transfer, not to the open that began it: where it is a sparse copy
 * of a large volume it outlives the peer call, and an open that waited {@link #OPEN_WAIT} for it
 * answers BUSY with how far it has come, for the puller to open again. A transfer has one freeze
 * at a time, so an open that retries never starts a second copy into the same file.
 */
public final class PoolImageExports implements ImageExports {

    private static final Logger log = LoggerFactory.getLogger(PoolImageExports.class);
    /** A freeze that is a sparse copy of a large, mostly written volume can take a while. */
    static final Duration FREEZE_DEADLINE = Duration.ofHours(1);
    /** Threads for the exports' calls on the pool, apart from those of the node's own calls. */
    static final int THREADS = 4;
    /** How long an open waits for its transfer's freeze before it answers how far it has come: well within a peer call. */
    static final Duration OPEN_WAIT = Duration.ofSeconds(20);
    /** Reading a transfer's record and the identity of a frozen copy: quick, unless the pool hangs. */
    private static final Duration OPEN_DEADLINE = Duration.ofSeconds(30);

    private final Pool pool;
    private final Path directory;
    private final RecordStore<Export> records;
    private final BlockingCalls blocking;
    private final Clock clock;
    /** Where freezes run, each to its end whoever waits for it: at most {@link #THREADS} at once. */
    private final Executor freezes;

    private final Duration openWait;
    /** One open or release of a transfer at a time. */
    private final ConcurrentHashMap<String, ReentrantLock> transfers = new ConcurrentHashMap<>();
    /** The freezes under way, by transfer: one at a time for each. */
    private final ConcurrentHashMap<String, Freezing> freezing = new ConcurrentHashMap<>();

    public PoolImageExports(Pool pool, Clock clock) {
        this(
                pool,
                clock,
                new ThreadPoolExecutor(
                        0,
                        THREADS,
                        1,
                        TimeUnit.MINUTES,
                        new SynchronousQueue<>(),
                        Thread.ofPlatform().name("transfer-freeze-", 0).daemon().factory()),
                OPEN_WAIT);
    }

    /** Exports whose freezes run on {@code freezes}, each open waiting {@code openWait} for its transfer's. */
    public PoolImageExports(Pool pool, Clock clock, Executor freezes, Duration openWait) {
        this(pool, clock, new BlockingCalls("transfer-export", THREADS), freezes, openWait);
    }

    PoolImageExports(Pool pool, Clock clock, BlockingCalls blocking, Executor freezes, Duration openWait) {
        this.pool = pool;
        this.directory = pool.root().resolve("outgoing");
        this.records = new RecordStore<>(directory, TransferRecords.EXPORT);
        this.blocking = blocking;
        this.clock = clock;
        this.freezes = freezes;
        this.openWait = openWait;
    }

    /** A freeze under way: the copy it writes, the bytes it copies, and its end. */
    private record Freezing(String what, Path target, long bytes, CompletableFuture<Void> ended) {

        /** Waits for its end until {@code deadline} (System.nanoTime); false if it is still copying then. */
        boolean awaitUntil(long deadline) {
            try {
                ended.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                return true;
            } catch (TimeoutException e) {
                return false;
            } catch (ExecutionException e) {
                return true; // failed: the open that follows says why
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw StorageException.busy("%s: interrupted while waiting for it; it goes on, retry shortly", what);
            }
        }

        StorageException stillCopying() {
            long copied = Files.exists(target, LinkOption.NOFOLLOW_LINKS) ? PoolCapacity.allocatedBytes(target) : 0;
            return StorageException.busy(
                    "%s: %d of %d bytes copied so far; it goes on, retry shortly",
                    what, Math.min(bytes, copied), bytes);
        }
    }

    /** What an open found: the frozen copy to read, or the freeze it must wait for. */
    private record Opened(ImageReader reader, Freezing freezing) {}

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
        long waitUntil = System.nanoTime() + openWait.toNanos();
        while (true) {
            // The record is read, and a freeze begun, under the transfer's lock; the freeze runs on.
            Opened opened = locked(transferId, () -> {
                Freezing under = freezing.get(transferId);
                return under != null
                        ? new Opened(null, under)
                        : blocking.call(
                                OPEN_DEADLINE,
                                "opening " + TransferIds.describe(source) + " for transfer " + transferId,
                                () -> openVolume(source, transferId, basis));
            });
            if (opened.reader() != null) {
                return opened.reader();
            }
            Freezing under = opened.freezing();
            if (!under.awaitUntil(waitUntil)) {
                throw under.stillCopying();
            }
            if (under.ended().isCompletedExceptionally()) {
                // this open says why; the next one freezes anew
                throw under.ended().exceptionNow() instanceof RuntimeException failure
                        ? failure
                        : StorageException.internal(under.ended().exceptionNow(), "%s failed", under.what());
            }
        }
    }

    /**
     * The volume's frozen copy for the transfer: the current round's, or, when there is none or the
     * basis is it, the freeze of a new round, begun here (held under the transfer's lock).
     */
    private Opened openVolume(ContentSource source, String transferId, Optional<String> basis) {
        Optional<Export> recorded = records.read(transferId);
        if (recorded.isPresent() && !recorded.get().source().equals(source)) {
            throw StorageException.conflict(
                    "transfer %s exports %s, not %s",
                    transferId, TransferIds.describe(recorded.get().source()), TransferIds.describe(source));
        }
        if (recorded.isEmpty()) {
            return new Opened(null, beginFreeze(source, transferId, Optional.empty()));
        }
        if (basis.isPresent() && basis.get().equals(recorded.get().current().identity())) {
            return new Opened(
                    null,
                    beginFreeze(source, transferId, Optional.of(recorded.get().current())));
        }
        Export export = recorded.get();
        removeUnnamed(transferId, export);
        Runnable used = () -> touch(transferId);
        used.run();
        String what = TransferIds.describe(source) + " as frozen for transfer " + transferId;
        Optional<ExportedImage.Basis> basisImage = export.basis()
                .filter(kept -> basis.equals(Optional.of(kept.identity())))
                .map(kept -> new ExportedImage.Basis(frozenImage(transferId, kept), kept.identity()));
        return new Opened(
                new ExportedImage(
                        frozenImage(transferId, export.current()),
                        export.current().sizeBytes(),
                        export.current().identity(),
                        basisImage,
                        what,
                        blocking,
                        used),
                null);
    }

    /**
     * Begins the freeze of the round after {@code before} (the first when empty) on a thread of its
     * own: the copy, then the record naming it (with {@code before} kept as the basis) and the
     * removal of the copies it no longer names.
     */
    private Freezing beginFreeze(ContentSource source, String transferId, Optional<Frozen> before) {
        Volume volume = pool.volumes()
                .find(source.id())
                .orElseThrow(() -> StorageException.notFound("%s does not exist", TransferIds.describe(source)));
        long round = before.map(Frozen::round).orElse(0L) + 1;
        Path target = directory.resolve(transferId + "." + round + ".img");
        Path image = pool.volumes().imagePath(volume.id());
        Freezing under = new Freezing(
                "freezing " + TransferIds.describe(source) + " for transfer " + transferId + " (round " + round + ")",
                target,
                PoolCapacity.allocatedBytes(image),
                new CompletableFuture<>());
        Freezing raced = freezing.putIfAbsent(transferId, under);
        if (raced != null) {
            return raced; // begun by an open whose own read outlasted its deadline
        }
        try {
            freezes.execute(() -> {
                Throwable failure = null;
                try {
                    blocking.call(FREEZE_DEADLINE, under.what(), () -> {
                        Export export = new Export(source, freeze(source, transferId, round), before);
                        records.write(transferId, export);
                        removeUnnamed(transferId, export);
                        return null;
                    });
                } catch (RuntimeException | Error e) {
                    log.warn("{} failed: {}", under.what(), e.getMessage());
                    failure = e;
                }
                // gone from the freezes under way before its waiters wake, so that they open what it made
                freezing.remove(transferId, under);
                if (failure == null) {
                    under.ended().complete(null);
                } else {
                    under.ended().completeExceptionally(failure);
                }
            });
        } catch (RejectedExecutionException e) {
            freezing.remove(transferId, under);
            throw StorageException.busy(
                    "this node is freezing as many volumes for transfers as it does at once (%d); retry shortly",
                    THREADS);
        }
        return under;
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
            Freezing under = freezing.get(transferId);
            if (under != null) {
                throw StorageException.busy("%s: release the transfer once its copy is done", under.what());
            }
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
