package dev.blockpool.pool;

import dev.blockpool.common.BlockingCalls;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * The ranges a snapshot metadata stream reports, handed out a message at a time: in increasing
 * order, none overlapping another, ranges that touch merged into one (also across the steps that
 * found them, which may end at any offset), none starting before the offset asked. Each step runs
 * on the threads for system calls that can hang, so a pool that stops answering fails the stream
 * at the deadline rather than holding the caller's thread. Closing it closes the images.
 */
public final class SnapshotRanges implements AutoCloseable {

    /** The most one step may take: a step is a bounded piece of work (a window of extents, 64 MiB compared). */
    static final Duration STEP_DEADLINE = Duration.ofMinutes(1);

    private final long capacityBytes;
    private final RangeSource source;
    private final BlockingCalls blocking;
    private final String what;
    private final Deque<ByteRange> complete = new ArrayDeque<>();
    /** The last range found: the next step may find its continuation. */
    private ByteRange open;

    private boolean sourceDone;

    SnapshotRanges(long capacityBytes, RangeSource source, BlockingCalls blocking, String what) {
        this.capacityBytes = capacityBytes;
        this.source = source;
        this.blocking = blocking;
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
        while (complete.size() < max && !sourceDone && !cancelled.getAsBoolean()) {
            RangeSource.Step step = blocking.call(STEP_DEADLINE, what, () -> source.next(cancelled));
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

    @Override
    public void close() {
        source.close();
    }
}
