package dev.blockpool.pool.extents;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.StorageException;
import dev.blockpool.pool.extents.ExtentComparison.Piece;
import dev.blockpool.pool.extents.ImageExtents.Extent;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/** How ranges found a step at a time become a stream's messages, and how two images' extents are compared. */
class SnapshotRangesTest {

    private static final long K = 4096;
    private final BlockingCalls blocking = new BlockingCalls("test", 2);

    /** A source that answers the steps it is given, and counts the steps taken. */
    private static final class Steps implements RangeSource {
        final Deque<Step> steps;
        int taken;
        boolean closed;

        Steps(Step... steps) {
            this.steps = new ArrayDeque<>(List.of(steps));
        }

        @Override
        public Step next(BooleanSupplier cancelled) {
            taken++;
            return steps.isEmpty() ? new Step(List.of(), true) : steps.removeFirst();
        }

        @Override
        public void close() {
            closed = true;
        }
    }

    private static ByteRange range(long fromBlock, long toBlock) {
        return ByteRange.between(fromBlock * K, toBlock * K);
    }

    @Test
    void rangesThatTouchAreOneEvenAcrossSteps() {
        Steps source = new Steps(
                new RangeSource.Step(List.of(range(0, 1), range(1, 2), range(4, 5)), false),
                new RangeSource.Step(List.of(range(5, 6)), false),
                new RangeSource.Step(List.of(), false),
                new RangeSource.Step(List.of(range(6, 8), range(9, 10)), true));
        try (SnapshotRanges ranges = new SnapshotRanges(10 * K, () -> source, blocking, "test")) {
            assertThat(ranges.next(1, () -> false)).containsExactly(range(0, 2));
            assertThat(ranges.next(5, () -> false)).containsExactly(range(4, 8), range(9, 10));
            assertThat(ranges.next(5, () -> false)).isEmpty();
            assertThat(ranges.capacityBytes()).isEqualTo(10 * K);
        }
        assertThat(source.closed).isTrue();
    }

    @Test
    void aMessageWaitsOnlyForAsManyRangesAsItTakes() {
        Steps source = new Steps(
                new RangeSource.Step(List.of(range(0, 1), range(2, 3)), false),
                new RangeSource.Step(List.of(range(4, 5)), false));
        try (SnapshotRanges ranges = new SnapshotRanges(10 * K, () -> source, blocking, "test")) {
            assertThat(ranges.next(1, () -> false)).containsExactly(range(0, 1));
            assertThat(source.taken)
                    .as("the second range may still grow: not sent before the next step")
                    .isEqualTo(1);
        }
    }

    @Test
    void aCancelledStreamTakesNoMoreSteps() {
        Steps source = new Steps(new RangeSource.Step(List.of(range(0, 1)), false));
        try (SnapshotRanges ranges = new SnapshotRanges(10 * K, () -> source, blocking, "test")) {
            assertThat(ranges.next(5, () -> true)).isEmpty();
            assertThat(source.taken).isZero();
        }
    }

    @Test
    void aStepLeftAtItsDeadlineKeepsTheImagesOpenUntilItReturns() throws InterruptedException {
        CountDownLatch kernelAnswers = new CountDownLatch(1);
        CountDownLatch closed = new CountDownLatch(1);
        AtomicBoolean usedAfterClose = new AtomicBoolean();
        RangeSource hanging = new RangeSource() {
            @Override
            public Step next(BooleanSupplier cancelled) {
                try {
                    kernelAnswers.await(); // a system call on a pool that does not answer
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                usedAfterClose.compareAndSet(false, closed.getCount() == 0);
                return new Step(List.of(range(0, 1)), false);
            }

            @Override
            public void close() {
                closed.countDown();
            }
        };
        SnapshotRanges ranges = new SnapshotRanges(10 * K, () -> hanging, blocking, Duration.ofMillis(100), "test");
        assertThatThrownBy(() -> ranges.next(1, () -> false))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.UNAVAILABLE));
        ranges.close();
        assertThat(closed.getCount())
                .as("the images stay open while the step left at its deadline uses them")
                .isEqualTo(1);
        kernelAnswers.countDown();
        assertThat(closed.await(30, TimeUnit.SECONDS))
                .as("closed as that step returns")
                .isTrue();
        assertThat(usedAfterClose).isFalse();
    }

    @Test
    void aStepThatStartsAfterTheCloseOpensNothing() {
        Steps source = new Steps(new RangeSource.Step(List.of(range(0, 1)), false));
        List<String> opened = new ArrayList<>();
        SnapshotRanges ranges = new SnapshotRanges(
                10 * K,
                () -> {
                    opened.add("the images");
                    return source;
                },
                blocking,
                "test");
        ranges.close();
        assertThat(ranges.next(5, () -> false)).isEmpty();
        assertThat(opened).isEmpty();
        assertThat(source.taken).isZero();
    }

    @Test
    void rangesOutOfOrderAreABugNotAnAnswer() {
        Steps source = new Steps(new RangeSource.Step(List.of(range(4, 5), range(3, 4)), true));
        try (SnapshotRanges ranges = new SnapshotRanges(10 * K, () -> source, blocking, "test")) {
            assertThatThrownBy(() -> ranges.next(5, () -> false)).isInstanceOf(IllegalStateException.class);
        }
    }

    private static Extent extent(long fromBlock, long blocks, long physicalBlock, int flags) {
        return new Extent(fromBlock * K, physicalBlock * K, blocks * K, flags);
    }

    @Test
    void sharedExtentsAreUnchangedAndTheRestIsReportedUnread() {
        List<Extent> base = List.of(extent(0, 8, 100, Extent.SHARED), extent(10, 2, 300, 0));
        List<Extent> target = List.of(
                extent(0, 3, 100, Extent.SHARED), // shared with the base
                extent(3, 1, 500, 0), // written since: copied on write elsewhere
                extent(4, 4, 104, Extent.SHARED),
                extent(12, 1, 600, 0)); // a hole that became data; blocks 10-11 became a hole
        assertThat(ExtentComparison.differences(0, 16 * K, base, target))
                .containsExactly(new Piece(range(3, 4), false), new Piece(range(10, 13), false));
    }

    @Test
    void withoutSharedExtentsTheDataRangesAreCompared() {
        List<Extent> base = List.of(extent(0, 4, 100, 0));
        List<Extent> target = List.of(extent(2, 4, 900, 0), extent(8, 2, 950, Extent.UNWRITTEN));
        assertThat(ExtentComparison.differences(K, 16 * K, base, target))
                .as("from the window's start; unwritten space reads as a hole")
                .containsExactly(new Piece(range(1, 6), true));
    }

    @Test
    void extentsWhosePlaceIsUnknownAreNeverTakenAsShared() {
        List<Extent> base = List.of(extent(0, 4, 100, Extent.SHARED | Extent.DELALLOC));
        List<Extent> target = List.of(extent(0, 4, 100, Extent.SHARED | Extent.DELALLOC));
        assertThat(ExtentComparison.differences(0, 4 * K, base, target)).containsExactly(new Piece(range(0, 4), true));
    }
}
