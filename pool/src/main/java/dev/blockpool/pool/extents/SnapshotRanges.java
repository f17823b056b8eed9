package dev.blockpool.pool.extents;

import dev.blockpool.common.BlockingCalls;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The ranges a snapshot metadata stream reports, handed out a message at a time: in increasing
 * order, none overlapping another, ranges that touch merged into one (also across the steps that
 * found them, which may end at any offset), none starting before the offset asked. Each step runs
 * on the streams' own threads for system calls that can hang, so a pool that stops answering fails
 * the stream at the deadline rather than holding the caller's thread. The first step opens the
 * images.
 *
 * <p>Closing it closes the images, but not under a step that still runs: a step left at its
 * deadline goes on in the kernel with their descriptors, which the kernel could meanwhile hand to
 * a file another thread opens. The stream and a running step each hold the images; the last to
 * let go closes them, and a step that starts after the close touches nothing.
 */
public final class SnapshotRanges implements AutoCloseable {

    /** The most one step may take: a step is a bounded piece of work (a window of extents, 64 MiB compared). */
    static final Duration STEP_DEADLINE = Duration.ofMinutes(1);

    private final long capacityBytes;
    private final Supplier<RangeSource> opening;
    private final BlockingCalls steps;
    private final Duration stepDeadline;
    private final String what;
    /** One for the stream until it is closed, one more while a step runs: the source is closed at 0. */
    private final AtomicInteger holds = new AtomicInteger(1);

    private final AtomicBoolean closed = new AtomicBoolean();
    /** Opened by the first step, on a thread for the steps; read and closed only by a holder. */
    private RangeSource source;

    private final Deque<ByteRange> complete = new ArrayDeque<>();
    /** The last range found: the next step may find its continuation. */
    private ByteRange open;

    private boolean sourceDone;

    /**
     * The data ranges of the image {@code image} (of {@code owner}, as messages name it) from
     * {@code from} up to {@code capacityBytes}, each step on a thread of {@code steps}.
     */
    public static SnapshotRanges allocated(
            Path image, String owner, long from, long capacityBytes, BlockingCalls steps, String what) {
        return new SnapshotRanges(
                capacityBytes,
                () -> closedOnFailure(
                        ImageExtents.open(image, owner), opened -> new AllocatedRanges(opened, from, capacityBytes)),
                steps,
                what);
    }

    /**
     * The ranges in which the image {@code target} differs from {@code base}, an earlier image of
     * the same volume (each of its owner, as messages name it), from {@code from} up to
     * {@code capacityBytes}; beyond the base's size it reads zeros.
     */
    public static SnapshotRanges delta(
            Path base,
            String baseOwner,
            Path target,
            String targetOwner,
            long from,
            long capacityBytes,
            BlockingCalls steps,
            String what) {
        return new SnapshotRanges(
                capacityBytes,
                () -> closedOnFailure(
                        ImageExtents.open(base, baseOwner),
                        baseImage -> closedOnFailure(
                                ImageExtents.open(target, targetOwner),
                                targetImage -> new ChangedRanges(baseImage, targetImage, from, capacityBytes))),
                steps,
                what);
    }

    /** What {@code use} makes of {@code image}; the image closed again when it fails. */
    private static <T> T closedOnFailure(ImageExtents image, Function<ImageExtents, T> use) {
        try {
            return use.apply(image);
        } catch (RuntimeException | Error e) {
            image.close();
            throw e;
        }
    }

    /** The ranges of the source {@code opening} opens, each step on a thread of {@code steps}. */
    SnapshotRanges(long capacityBytes, Supplier<RangeSource> opening, BlockingCalls steps, String what) {
        this(capacityBytes, opening, steps, STEP_DEADLINE, what);
    }

    SnapshotRanges(
            long capacityBytes,
            Supplier<RangeSource> opening,
            BlockingCalls steps,
            Duration stepDeadline,
            String what) {
        this.capacityBytes = capacityBytes;
        this.opening = opening;
        this.steps = steps;
        this.stepDeadline = stepDeadline;
        this.what = what;
    }

    /** The size of the volume the snapshot was taken of: the same in every message. */
    public long capacityBytes() {
        return capacityBytes;
    }

    /**
     * The next ranges, at most {@code max} and at least one, while there are any; empty once all
     * were handed out, or when {@code cancelled} says so.
     */
    public List<ByteRange> next(int max, BooleanSupplier cancelled) {
        BooleanSupplier over = () -> closed.get() || cancelled.getAsBoolean();
        while (complete.size() < max && !sourceDone && !over.getAsBoolean()) {
            RangeSource.Step step = steps.call(stepDeadline, what, () -> step(over));
            step.ranges().forEach(this::add);
            sourceDone = step.done();
        }
        if (sourceDone && open != null) {
            complete.add(open);
            open = null;
        }
        List<ByteRange> ranges = new ArrayList<>(Math.min(max, complete.size()));
        while (ranges.size() < max && !complete.isEmpty()) {
            ranges.add(complete.removeFirst());
        }
        return ranges;
    }

    private void add(ByteRange range) {
        if (open == null) {
            open = range;
        } else if (range.offset() == open.end()) {
            open = ByteRange.between(open.offset(), range.end());
        } else if (range.offset() > open.end()) {
            complete.add(open);
            open = range;
        } else {
            throw new IllegalStateException("ranges out of order: " + range + " after " + open);
        }
    }

    /** One step of the source, opening it first; nothing once the stream is closed. */
    private RangeSource.Step step(BooleanSupplier over) {
        if (!hold()) {
            return new RangeSource.Step(List.of(), true);
        }
        try {
            if (source == null) {
                source = opening.get();
            }
            return source.next(over);
        } finally {
            letGo();
        }
    }

    private boolean hold() {
        int now;
        do {
            now = holds.get();
            if (now == 0) {
                return false;
            }
        } while (!holds.compareAndSet(now, now + 1));
        return true;
    }

    private void letGo() {
        if (holds.decrementAndGet() == 0 && source != null) {
            source.close();
        }
    }

    /** Closes the images now, or, while a step runs, as that step returns. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            letGo();
        }
    }
}
