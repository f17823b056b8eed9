package dev.blockpool.pool;

import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The pool's promises, kept within its {@link CapacityPolicy}. What is promised is read from the
 * pool at each look, never remembered: each committed volume's image promises its size, each
 * committed snapshot's image the bytes it holds. So a crash, a restart or another process's work
 * changes nothing of the count, and a create that never committed promises nothing.
 *
 * <p>The only memory is of promises being made now: a create, expansion or snapshot holds its
 * bytes from its check until its record is committed, so two calls at once cannot both take the
 * last room. Checks are serialised in this process; one process acts on a pool's records (the node
 * plugin of a node-local pool, the acting controller of a shared one).
 */
public final class PoolCapacity {

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
    /** Image path to the bytes it will promise once committed, for the calls under way. */
    private final Map<Path, Long> underWay = new HashMap<>();

    PoolCapacity(Path root, PoolSpace space, CapacityPolicy policy) {
        this.root = root;
        this.space = space;
        this.policy = policy;
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
    <T> T promising(Path image, long bytes, Allocation allocation, String what, Supplier<T> work) {
        hold(image, bytes, allocation, what);
        try {
            return work.get();
        } finally {
            release(image);
        }
    }

    private synchronized void hold(Path image, long bytes, Allocation allocation, String what) {
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
        long more = Math.max(0, bytes - tally.ofImage);
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

    private synchronized void release(Path image) {
        underWay.remove(image);
    }

    private Reading reading(Tally tally) {
        long size = space.totalBytes();
        return new Reading(size, space.availableBytes(), policy.limitBytes(size), tally.promised, policy.thin());
    }

    /** What the committed records promise, and those of the calls under way; {@code image}'s share apart. */
    private Tally tally(Path image) {
        Tally tally = new Tally();
        Map<Path, Long> pending = new HashMap<>(underWay);
        PoolCensus.forEachImage(
                root.resolve("volumes"), (path, held) -> tally.add(path, held.size(), pending.remove(path), image));
        PoolCensus.forEachImage(
                root.resolve("snapshots"),
                (path, held) -> tally.add(path, held.allocated(), pending.remove(path), image));
        pending.forEach((path, bytes) -> tally.add(path, 0, bytes, image)); // not committed yet
        return tally;
    }

    private static final class Tally {
        long promised;
        long ofImage;

        /** Counts what a committed image promises, or more when a call under way will make it promise more. */
        void add(Path path, long committed, Long underWay, Path image) {
            long promise = underWay == null ? committed : Math.max(committed, underWay);
            promised += promise;
            if (path.equals(image)) {
                ofImage = promise;
            }
        }
    }

    /** The bytes an image holds now, for a snapshot's promise before it is made. */
    static long allocatedBytes(Path image) {
        try {
            return Libc.space(image.toString()).allocated();
        } catch (Libc.ErrnoException e) {
            throw StorageException.io(e, "cannot read the size of %s", image);
        }
    }
}
