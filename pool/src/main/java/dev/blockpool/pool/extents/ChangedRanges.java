package dev.blockpool.pool.extents;

import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import dev.blockpool.pool.extents.ExtentComparison.Piece;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Optional;
import java.util.function.BooleanSupplier;

/**
 * The ranges in which a target image differs from a base image, from an offset: a window at a
 * time, the extents of both (FIEMAP) tell where they may differ ({@link ExtentComparison}), and
 * only where the images share no extents are those ranges read and compared, block by block of
 * the pool's filesystem. Where the filesystem maps no extents (NFS), the data ranges of both
 * (SEEK_DATA) are compared.
 */
final class ChangedRanges implements RangeSource {

    /**
     * Extents mapped per window, of each image: a window ends where the first of the two runs out,
     * so what a window holds is bounded whatever the images' layout (a base of alternating data
     * and holes under a target rewritten as one extent, say).
     */
    static final int EXTENTS_PER_WINDOW = 1024;
    /**
     * A window where extents are not mapped: the data ranges of both images in it are compared,
     * at most {@link #EXTENTS_PER_WINDOW} of them (the window then ends after the last).
     */
    static final long UNMAPPED_WINDOW_BYTES = 1L << 30;
    /** Bytes compared per step at most, so that a step stays short and cancellation is seen. */
    static final long COMPARED_BYTES_PER_STEP = 64L << 20;

    private static final long BUFFER_BYTES = 1L << 20;

    private final StoredImage base;
    private final StoredImage target;
    private final long capacity;
    private final long blockSize;
    /** The buffers of the comparison, made at its first read: a delta from shared extents reads nothing. */
    private Arena arena;

    private MemorySegment baseBuffer;
    private MemorySegment targetBuffer;
    /** The ranges of the windows mapped so far that are yet to be reported or compared, in order. */
    private final Deque<Piece> pieces = new ArrayDeque<>();

    private long cursor;
    private boolean mapped = true;

    ChangedRanges(StoredImage base, StoredImage target, long from, long capacity) {
        this.base = base;
        this.target = target;
        this.cursor = from;
        this.capacity = capacity;
        this.blockSize = target.blockSize();
    }

    @Override
    public Step next(BooleanSupplier cancelled) {
        List<ByteRange> found = new ArrayList<>();
        long budget = COMPARED_BYTES_PER_STEP;
        while (!cancelled.getAsBoolean()) {
            Piece piece = pieces.peekFirst();
            if (piece == null) {
                if (cursor >= capacity) {
                    return new Step(found, true);
                }
                if (!found.isEmpty()) {
                    return new Step(found, false); // a window per step
                }
                mapWindow();
            } else if (!piece.compare()) {
                found.add(pieces.removeFirst().range());
            } else if (budget <= 0) {
                return new Step(found, false);
            } else {
                long length = Math.min(piece.range().length(), Math.min(budget, BUFFER_BYTES));
                compare(new ByteRange(piece.range().offset(), length), found);
                budget -= length;
                pieces.removeFirst();
                if (length < piece.range().length()) {
                    pieces.addFirst(new Piece(
                            ByteRange.between(
                                    piece.range().offset() + length,
                                    piece.range().end()),
                            true));
                }
            }
        }
        return new Step(found, false);
    }

    /** Finds the pieces of the next window and moves the cursor to its end. */
    private void mapWindow() {
        if (mapped) {
            try {
                ImageExtents.Mapping targetExtents = target.map(cursor, capacity, EXTENTS_PER_WINDOW);
                long end = windowEnd(targetExtents, capacity);
                ImageExtents.Mapping baseExtents = base.map(cursor, end, EXTENTS_PER_WINDOW);
                end = windowEnd(baseExtents, end);
                pieces.addAll(
                        ExtentComparison.differences(cursor, end, baseExtents.extents(), targetExtents.extents()));
                cursor = end;
                return;
            } catch (Libc.ErrnoException e) {
                if (!ImageExtents.cannotMap(e)) {
                    throw StorageException.io(e, "cannot map the extents of a snapshot's image");
                }
                mapped = false;
            }
        }
        long end = Math.min(capacity, cursor + UNMAPPED_WINDOW_BYTES);
        List<ByteRange> data = dataRanges(cursor, end);
        data.forEach(range -> pieces.add(new Piece(range, true)));
        cursor = data.size() < EXTENTS_PER_WINDOW ? end : data.getLast().end();
    }

    /** Where a window that {@code mapping} describes ends: at {@code end}, or where its extents run out. */
    private static long windowEnd(ImageExtents.Mapping mapping, long end) {
        return mapping.complete()
                ? end
                : Math.min(end, mapping.extents().getLast().end());
    }

    /**
     * The ranges of {@code [from, to)} that hold data in either image, in order, overlaps merged;
     * at most {@link #EXTENTS_PER_WINDOW}, the last of which may then go on beyond what either
     * image has told (a data range of one that starts within it is a part of it up to its end).
     */
    private List<ByteRange> dataRanges(long from, long to) {
        List<ByteRange> union = new ArrayList<>();
        Optional<ByteRange> inBase = base.dataFrom(from, to);
        Optional<ByteRange> inTarget = target.dataFrom(from, to);
        while (inBase.isPresent() || inTarget.isPresent()) {
            boolean baseFirst = inTarget.isEmpty()
                    || (inBase.isPresent()
                            && inBase.get().offset() <= inTarget.get().offset());
            ByteRange next = baseFirst ? inBase.get() : inTarget.get();
            if (!union.isEmpty() && union.getLast().end() >= next.offset()) {
                ByteRange last = union.removeLast();
                union.add(ByteRange.between(last.offset(), Math.max(last.end(), next.end())));
            } else if (union.size() == EXTENTS_PER_WINDOW) {
                return union;
            } else {
                union.add(next);
            }
            long covered = union.getLast().end(); // what lies before is in the union already
            if (baseFirst) {
                inBase = base.dataFrom(covered, to);
            } else {
                inTarget = target.dataFrom(covered, to);
            }
        }
        return union;
    }

    /** Adds to {@code found} the blocks of {@code range} whose bytes differ, each cut to the range. */
    private void compare(ByteRange range, List<ByteRange> found) {
        if (arena == null) {
            arena = Arena.ofShared(); // the steps run on any of the threads for blocking calls
            baseBuffer = arena.allocate(BUFFER_BYTES, 4096);
            targetBuffer = arena.allocate(BUFFER_BYTES, 4096);
        }
        MemorySegment before = baseBuffer.asSlice(0, range.length());
        MemorySegment after = targetBuffer.asSlice(0, range.length());
        base.read(range.offset(), before);
        target.read(range.offset(), after);
        long at = range.offset();
        while (at < range.end()) {
            long blockEnd = Math.min(range.end(), (at / blockSize + 1) * blockSize);
            long start = at - range.offset();
            long length = blockEnd - at;
            if (before.asSlice(start, length).mismatch(after.asSlice(start, length)) >= 0) {
                found.add(ByteRange.between(at, blockEnd));
            }
            at = blockEnd;
        }
    }

    @Override
    public void close() {
        try {
            base.close();
            target.close();
        } finally {
            if (arena != null) {
                arena.close();
            }
        }
    }
}
