package dev.blockpool.pool;

import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import dev.blockpool.pool.records.RecordStore;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The pool's promises, kept within its {@link CapacityPolicy}. What is promised is read from the
 * pool, never trusted to memory alone: each committed volume's image promises its size, each
 * committed snapshot's image the blocks it holds. So a crash, a restart or another process's work
 * changes nothing of the count, and a create that never committed promises nothing.
 *
 * <p>Counting means a statx(2) of every image, so the count is kept as a ledger and taken again
 * only when the {@code volumes} or {@code snapshots} directory has changed since (a record
 * committed, rewritten or removed, by any process) while none of this process's own is under way,
 * or once it is a minute old; this process's own changes update the ledger as they land. The pool
 * has one writer of its images (the node plugin of a node-local pool, the acting controller of a
 * shared one), so a change of another process among ours is an accident, seen within the minute.
 * Linux 6.13 and newer give a directory whose change time was read a new one at its next change
 * (multigrain timestamps on ext4, XFS, btrfs, tmpfs); older kernels keep it to their clock tick,
 * within which a second change goes unseen until the next.
 *
 * <p>Calls under way hold their bytes from their check until they end, committed or not, so two
 * calls at once cannot both take the last room. Checks are serialised in this process.
 *
 * <p>Transfers between nodes promise too, without records. An image being pulled from another
 * node ({@code incoming/<volume-id>.img}) promises its full size from its creation until it
 * becomes its volume's image or is removed, so that two pulls of hours cannot both count on the
 * last room; a volume's copy frozen for another node to pull ({@code outgoing/}) promises the
 * blocks it holds, as a snapshot does.
 */
public final class PoolCapacity {

    /** How old a ledger may be and still be used without a count (docs/performance-pool.md: what a count costs). */
    static final Duration RECOUNT_AFTER = Duration.ofMinutes(1);
    /** The directory of the images being pulled from other nodes. */
    static final String INCOMING = "incoming";

    /**
     * The pool at one look: its filesystem's size and free bytes, the most it may promise and what
     * it has promised.
     */
    public record Reading(long sizeBytes, long availableBytes, long limitBytes, long promisedBytes, boolean thin) {

        /**
         * What one more volume may still promise: within the policy, and within what is free now
         * when its image takes its blocks at once ({@code preallocated}) or when the pool is not
         * thin (every promise is then backed, so other files that took the room shrink it).
         */
        public long promisableBytes(Allocation allocation) {
            long left = limitBytes - promisedBytes;
            if (allocation == Allocation.PREALLOCATED || !thin) {
                left = Math.min(left, availableBytes);
            }
            return Math.max(0, left);
        }

        /** Whether the promises exceed what the filesystem holds: then writes can fill it. */
        public boolean beyondSize() {
            return promisedBytes > sizeBytes;
        }
    }

    private final Path root;
    private final PoolSpace space;
    private final CapacityPolicy policy;
    private final Clock clock;
    /** Image path to the bytes it will promise once committed, for the calls under way. */
    private final Map<Path, Long> underWay = new HashMap<>();
    /** The committed records' promises as last counted; null until the first look. */
    private Ledger ledger;
    /** This process's changes to images and records begun and not yet in the ledger. */
    private int changesUnderWay;

    PoolCapacity(Path root, PoolSpace space, CapacityPolicy policy, Clock clock) {
        this.root = root;
        this.space = space;
        this.policy = policy;
        this.clock = clock;
    }

    public CapacityPolicy policy() {
        return policy;
    }

    /** The pool as it is now, the promises of calls under way included. */
    public synchronized Reading read() {
        return reading(tally(null));
    }

    /**
     * Runs {@code work}, which makes or grows the image at {@code image}, holding {@code bytes}
     * for it until the work ends, committed or not; refused before any work is done with
     * OUT_OF_RANGE when even an empty pool could not hold them, EXHAUSTED (saying which limit)
     * when the policy or the free space cannot. An image that already promises some (an
     * expansion) is asked only for the difference.
     *
     * @param allocation how the work provides the image's blocks: preallocated ones must be free now
     * @param what the volume or snapshot, for the message
     */
    public <T> T promising(Path image, long bytes, Allocation allocation, String what, Supplier<T> work) {
        return promising(image, Optional.empty(), bytes, allocation, what, work);
    }

    /**
     * {@link #promising(Path, long, Allocation, String, Supplier)} of work that moves the image at
     * {@code movedFrom} (an incoming image) to {@code image}: what it promises is counted as
     * {@code image}'s own, so that the move needs no room twice.
     */
    <T> T promising(
            Path image, Optional<Path> movedFrom, long bytes, Allocation allocation, String what, Supplier<T> work) {
        hold(image, movedFrom, bytes, allocation, what);
        try {
            return work.get();
        } finally {
            movedFrom.ifPresent(this::recount);
            landed(image);
        }
    }

    /**
     * Runs {@code change}, a change of this process to the record or the image at {@code image}
     * that promises nothing more (a rewrite, a removal), and counts the image as it then is.
     */
    public <T> T changing(Path image, Supplier<T> change) {
        began();
        try {
            return change.get();
        } finally {
            landed(image);
        }
    }

    private synchronized void began() {
        changesUnderWay++;
    }

    private synchronized void hold(
            Path image, Optional<Path> movedFrom, long bytes, Allocation allocation, String what) {
        if (bytes < 0) {
            throw StorageException.invalid("%d bytes is not a size", bytes);
        }
        long size = space.totalBytes();
        if (bytes > size) {
            throw StorageException.outOfRange(
                    "%d bytes is more than the pool's filesystem holds (%d bytes)", bytes, size);
        }
        Tally tally = tally(image);
        Reading now = reading(tally);
        long moved =
                movedFrom.map(from -> ledger.promises.getOrDefault(from, 0L)).orElse(0L);
        long more = Math.max(0, bytes - tally.ofImage - moved);
        if (more > now.limitBytes() - now.promisedBytes()) {
            long left = Math.max(0, now.limitBytes() - now.promisedBytes());
            throw StorageException.noSpace(
                    "the pool cannot promise %d more bytes to %s: it can promise %d more, having promised %d bytes of "
                            + "its limit of %d (its filesystem's %d bytes %s, less a reserve of %s); delete snapshots "
                            + "or volumes, or see --overcommit-ratio",
                    more,
                    what,
                    left,
                    now.promisedBytes(),
                    now.limitBytes(),
                    size,
                    policy.thin()
                            ? String.format(Locale.ROOT, "times the over-commit ratio %s", policy.overcommitRatio())
                            : "with no over-commit",
                    policy.reserve());
        }
        if (more > now.promisableBytes(allocation)) {
            throw StorageException.noSpace(
                    "the pool has %d bytes free, %d bytes were asked for", now.availableBytes(), more);
        }
        underWay.merge(image, bytes, Math::max);
        changesUnderWay++;
    }

    /**
     * The problem of a thin pool whose promises exceed its filesystem once less than the policy's
     * warning level is free: writes into sparse volumes can then fill it. Looked at only below
     * that level, so a pool with room costs no count.
     */
    Optional<String> nearlyFull(long sizeBytes, long availableBytes) {
        long warnBelow = policy.warnBelow().of(sizeBytes);
        if (!policy.thin() || availableBytes >= warnBelow) {
            return Optional.empty();
        }
        Reading now = read();
        if (!now.beyondSize()) {
            return Optional.empty();
        }
        return Optional.of(String.format(
                Locale.ROOT,
                "the pool's filesystem at %s has %d bytes free, below the warning level of %d, and its volumes and "
                        + "snapshots are promised %d bytes of its %d: once it is full, writes into a sparse volume's "
                        + "unwritten blocks fail; free room (delete snapshots or volumes) or move volumes away",
                root,
                availableBytes,
                warnBelow,
                now.promisedBytes(),
                sizeBytes));
    }

    /**
     * The end of a change of this process to the image (its promise, if it held one, released):
     * the image's promise as its record now stands is written into the ledger, which then holds
     * the directories as they are now.
     */
    private synchronized void landed(Path image) {
        underWay.remove(image);
        changesUnderWay--;
        recount(image);
    }

    /** Writes the image's promise as it now stands into the ledger, which then holds the directories as they are. */
    private synchronized void recount(Path image) {
        if (ledger == null) {
            return;
        }
        Path directory = image.getParent();
        String name = image.getFileName().toString();
        Path record = directory.resolve(
                name.substring(0, name.length() - ImageRecords.IMAGE_SUFFIX.length()) + RecordStore.SUFFIX);
        long promise = 0;
        if (isTransfer(directory) || Files.exists(record, LinkOption.NOFOLLOW_LINKS)) {
            try {
                promise = promiseOf(image, Libc.space(image.toString()));
            } catch (Libc.ErrnoException e) {
                promise = 0; // a committed record without its image promises nothing (the health calls report it)
            }
        }
        ledger.set(image, promise);
        ledger.stamp = stamp();
    }

    private Reading reading(Tally tally) {
        long size = space.totalBytes();
        return new Reading(size, space.availableBytes(), policy.limitBytes(size), tally.promised, policy.thin());
    }

    /** What the committed records promise, and those of the calls under way; {@code image}'s share apart. */
    private Tally tally(Path image) {
        if (stale()) {
            ledger = count(stamp(), clock.millis());
        }
        Tally tally = new Tally();
        tally.promised = ledger.total;
        long committed = image == null ? 0 : ledger.promises.getOrDefault(image, 0L);
        tally.ofImage = committed;
        for (Map.Entry<Path, Long> call : underWay.entrySet()) {
            long held = ledger.promises.getOrDefault(call.getKey(), 0L);
            tally.promised += Math.max(0, call.getValue() - held);
            if (call.getKey().equals(image)) {
                tally.ofImage = Math.max(committed, call.getValue());
            }
        }
        return tally;
    }

    /**
     * Whether the ledger must be counted again: never counted; or, while none of this process's
     * changes is under way (whose own landing changes the directories), the directories changed
     * since it was, or it is older than {@link #RECOUNT_AFTER}, the bound on how long a change of
     * another process that fell among ours can go unseen.
     */
    private boolean stale() {
        if (ledger == null) {
            return true;
        }
        if (changesUnderWay > 0) {
            return false;
        }
        return clock.millis() - ledger.countedAt > RECOUNT_AFTER.toMillis() || !ledger.stamp.equals(stamp());
    }

    /** Every committed record's promise and every incoming image's, counted from the pool. */
    private Ledger count(Stamp stamp, long now) {
        Ledger counted = new Ledger(stamp, now);
        PoolCensus.forEachImage(root.resolve("volumes"), (path, held) -> counted.set(path, promiseOf(path, held)));
        PoolCensus.forEachImage(root.resolve("snapshots"), (path, held) -> counted.set(path, promiseOf(path, held)));
        for (Path directory : List.of(root.resolve(INCOMING), root.resolve(Reconciler.OUTGOING))) {
            try (DirectoryStream<Path> images = Files.newDirectoryStream(directory, "*" + ImageRecords.IMAGE_SUFFIX)) {
                for (Path image : images) {
                    try {
                        counted.set(image, promiseOf(image, Libc.space(image.toString())));
                    } catch (Libc.ErrnoException e) {
                        // removed since the listing: it promises nothing
                    }
                }
            } catch (NoSuchFileException e) {
                // a pool of a driver before transfers has none
            } catch (IOException e) {
                throw StorageException.io(e, "cannot list %s", directory);
            }
        }
        return counted;
    }

    /** Whether the directory holds the images of transfers, which promise without records. */
    private boolean isTransfer(Path directory) {
        return directory.equals(root.resolve(INCOMING)) || directory.equals(root.resolve(Reconciler.OUTGOING));
    }

    /**
     * What a committed image promises: a volume's its size, a snapshot's the blocks it holds,
     * which become its own when its volume rewrites what they share.
     */
    private static long promiseOf(Path image, Libc.FileSpace held) {
        Path directory = image.getParent();
        return directory.endsWith("snapshots") || directory.endsWith(Reconciler.OUTGOING)
                ? held.allocated()
                : held.size();
    }

    private Stamp stamp() {
        return new Stamp(
                changed(root.resolve("volumes")),
                changed(root.resolve("snapshots")),
                changed(root.resolve(INCOMING)),
                changed(root.resolve(Reconciler.OUTGOING)));
    }

    /** When a directory last changed, to the nanosecond the filesystem keeps; a missing one never did. */
    private static long changed(Path directory) {
        try {
            Instant modified = Files.getLastModifiedTime(directory, LinkOption.NOFOLLOW_LINKS)
                    .toInstant();
            return modified.getEpochSecond() * 1_000_000_000L + modified.getNano();
        } catch (NoSuchFileException e) {
            return 0;
        } catch (IOException e) {
            throw StorageException.io(e, "cannot read the change time of %s", directory);
        }
    }

    /** When the counted directories last changed, as the ledger counted them. */
    private record Stamp(long volumesChanged, long snapshotsChanged, long incomingChanged, long outgoingChanged) {}

    private static final class Ledger {
        final Map<Path, Long> promises = new HashMap<>();
        final long countedAt;
        long total;
        Stamp stamp;

        Ledger(Stamp stamp, long countedAt) {
            this.stamp = stamp;
            this.countedAt = countedAt;
        }

        void set(Path image, long promise) {
            Long before = promise == 0 ? promises.remove(image) : promises.put(image, promise);
            total += promise - (before == null ? 0 : before);
        }
    }

    private static final class Tally {
        long promised;
        long ofImage;
    }

    /** An image's size now. */
    static long sizeOf(Path image) {
        try {
            return Libc.space(image.toString()).size();
        } catch (Libc.ErrnoException e) {
            throw StorageException.io(e, "cannot read the size of %s", image);
        }
    }

    /** The bytes an image holds now, for the promise of a copy of it (a snapshot) before it is made. */
    public static long allocatedBytes(Path image) {
        try {
            return Libc.space(image.toString()).allocated();
        } catch (Libc.ErrnoException e) {
            throw StorageException.io(e, "cannot read the size of %s", image);
        }
    }
}
