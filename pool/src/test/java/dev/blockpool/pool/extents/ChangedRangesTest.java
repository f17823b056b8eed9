package dev.blockpool.pool.extents;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.Libc;
import dev.blockpool.pool.extents.ImageExtents.Extent;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * What one step of a delta holds in memory, whatever the images' layout: a base of alternating
 * data and holes under a target rewritten as one extent is the worst case, every base extent a
 * change of its own.
 */
class ChangedRangesTest {

    private static final long K = 4096;
    private static final long TIB = 1L << 40;
    /** More than a bounded window ever needs from one image; far fewer than the images hold. */
    private static final int MOST_PER_STEP = 4 * ChangedRanges.EXTENTS_PER_WINDOW;

    /**
     * An image of {@code TIB} bytes told extent by extent, as the filesystem would: data every
     * {@code stride} bytes, one block long (one extent of it all when the stride is 0). It counts
     * what it tells during a step and refuses to tell more than a bounded window could need.
     */
    private static final class LaidOutImage implements StoredImage {
        private final long stride;
        private final long physical;
        private final byte fill;
        private final Libc.ErrnoException cannotMap;
        int toldThisStep;

        LaidOutImage(long stride, long physical, byte fill, Libc.ErrnoException cannotMap) {
            this.stride = stride;
            this.physical = physical;
            this.fill = fill;
            this.cannotMap = cannotMap;
        }

        private void tell(int count) {
            toldThisStep += count;
            assertThat(toldThisStep)
                    .as("extents or data ranges told in one step of the delta")
                    .isLessThanOrEqualTo(MOST_PER_STEP);
        }

        @Override
        public long blockSize() {
            return K;
        }

        @Override
        public Optional<ByteRange> dataFrom(long from, long end) {
            tell(1);
            if (stride == 0) {
                return from < end ? Optional.of(ByteRange.between(from, end)) : Optional.empty();
            }
            long block = (from + stride - 1) / stride * stride;
            if (from % stride < K && from % stride != 0) {
                block = from; // within a block of data
            }
            return block < end
                    ? Optional.of(ByteRange.between(block, Math.min(end, block / stride * stride + K)))
                    : Optional.empty();
        }

        @Override
        public ImageExtents.Mapping map(long from, long to, int max) {
            if (cannotMap != null) {
                throw cannotMap;
            }
            if (stride == 0) {
                tell(1);
                return new ImageExtents.Mapping(List.of(new Extent(0, physical, TIB, Extent.LAST)), true);
            }
            List<Extent> extents = new ArrayList<>();
            for (long at = from / stride * stride; at < to && extents.size() < max; at += stride) {
                extents.add(new Extent(at, physical + at, K, 0));
            }
            tell(extents.size());
            return new ImageExtents.Mapping(
                    extents, extents.size() < max || extents.getLast().end() >= to);
        }

        @Override
        public void read(long offset, MemorySegment buffer) {
            buffer.fill(fill);
        }

        @Override
        public void close() {}
    }

    @Test
    void aWindowEndsWhereTheBaseHasToldEnoughExtents() {
        stepThroughTheWorstLayout(null);
    }

    @Test
    void withoutExtentsAWindowEndsWhereEnoughDataRangesWereFound() {
        // The filesystem's own answer where it cannot map extents (procfs, like NFS).
        Libc.ErrnoException cannotMap = null;
        try (ImageExtents unmappable = ImageExtents.open(Path.of("/proc/self/stat"), "procfs")) {
            unmappable.map(0, K, 1);
        } catch (Libc.ErrnoException e) {
            cannotMap = e;
        }
        assertThat(cannotMap).isNotNull().matches(ImageExtents::cannotMap);
        stepThroughTheWorstLayout(cannotMap);
    }

    private static void stepThroughTheWorstLayout(Libc.ErrnoException cannotMap) {
        LaidOutImage base = new LaidOutImage(2 * K, 1L << 50, (byte) 0, cannotMap);
        LaidOutImage target = new LaidOutImage(0, 1L << 52, (byte) 1, cannotMap);
        try (ChangedRanges delta = new ChangedRanges(base, target, 0, TIB)) {
            long reported = 0;
            for (int step = 0; step < 20; step++) {
                base.toldThisStep = 0;
                target.toldThisStep = 0;
                RangeSource.Step found = delta.next(() -> false);
                assertThat(found.done()).isFalse();
                assertThat(found.ranges())
                        .allSatisfy(range -> assertThat(range.length()).isEqualTo(K));
                reported += found.ranges().size();
            }
            assertThat(reported).as("every block of the target differs").isPositive();
        }
    }
}
