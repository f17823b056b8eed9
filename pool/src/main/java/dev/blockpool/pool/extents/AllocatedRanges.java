package dev.blockpool.pool.extents;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.BooleanSupplier;

/** The data ranges of an image from an offset, as the filesystem tells them (SEEK_DATA, SEEK_HOLE): no byte is read. */
final class AllocatedRanges implements RangeSource {

    /** Ranges found per step: a step is this many pairs of lseek calls at most. */
    static final int RANGES_PER_STEP = 1024;

    private final StoredImage image;
    private final long capacity;
    private long cursor;

    AllocatedRanges(StoredImage image, long from, long capacity) {
        this.image = image;
        this.cursor = from;
        this.capacity = capacity;
    }

    @Override
    public Step next(BooleanSupplier cancelled) {
        List<ByteRange> found = new ArrayList<>();
        while (found.size() < RANGES_PER_STEP && !cancelled.getAsBoolean()) {
            Optional<ByteRange> data = image.dataFrom(cursor, capacity);
            if (data.isEmpty()) {
                cursor = capacity;
                return new Step(found, true);
            }
            found.add(data.get());
            cursor = data.get().end();
        }
        return new Step(found, false);
    }

    @Override
    public void close() {
        image.close();
    }
}
