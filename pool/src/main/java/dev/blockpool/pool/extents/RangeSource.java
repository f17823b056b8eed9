package dev.blockpool.pool.extents;

import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * Ranges of an image found one step at a time, each step a bounded piece of work on the pool's
 * filesystem (made on a thread for system calls that can hang), in increasing order across steps.
 */
interface RangeSource extends AutoCloseable {

    /**
     * The next ranges, after every one returned before; returns early, with what it has, once
     * {@code cancelled} says so.
     */
    Step next(BooleanSupplier cancelled);

    @Override
    void close();

    /** What one step found, and whether the image has no more. */
    record Step(List<ByteRange> ranges, boolean done) {}
}
