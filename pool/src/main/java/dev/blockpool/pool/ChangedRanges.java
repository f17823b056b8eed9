package dev.blockpool.pool;

import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import dev.blockpool.pool.ExtentComparison.Piece;
import dev.blockpool.pool.ImageExtents.Extent;
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

    /** Target extents mapped per window; the base's extents in that window follow. */
    static final int EXTENTS_PER_WINDOW = 1024;
    /** A window where extents are not mapped: the data ranges of both images in it are compared. */
    static final long UNMAPPED_WINDOW_BYTES = 1L << 30;
    /** Bytes compared per step at most, so that a step stays short and cancellation is seen. */
    static final long COMPARED_BYTES_PER_STEP = 64L << 20;

    private static final long BUFFER_BYTES = 1L << 20;

    private final ImageExtents base;
    private final ImageExtents target;
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

    ChangedRanges(ImageExtents base, ImageExtents target, long from, long capacity) {
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
                long end = targetExtents.complete()
                        ? capacity
                        : Math.min(capacity, targetExtents.extents().getLast().end());
                pieces.addAll(ExtentComparison.differences(
                        cursor, end, allExtents(base, cursor, end), targetExtents.extents()));
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
        dataRanges(cursor, end).forEach(range -> pieces.add(new Piece(range, true)));
        cursor = end;
    }

    private static List<Extent> allExtents(ImageExtents image, long from, long to) {
        List<Extent> extents = new ArrayList<>();
        long at = from;
        while (at < to) {
            ImageExtents.Mapping mapping = image.map(at, to, EXTENTS_PER_WINDOW);
            extents.addAll(mapping.extents());
            if (mapping.complete()) {
                break;
            }
            at = mapping.extents().getLast().end();
        }
        return extents;
    }

    /** The ranges of {@code [from, to)} that hold data in either image, in order, overlaps merged. */
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
            } else {
                union.add(next);
            }
            if (baseFirst) {
                inBase = base.dataFrom(next.end(), to);
            } else {
                inTarget = target.dataFrom(next.end(), to);
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
