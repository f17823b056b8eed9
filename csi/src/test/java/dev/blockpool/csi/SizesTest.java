package dev.blockpool.csi;

import static dev.blockpool.csi.Sizes.GIB;
import static dev.blockpool.csi.Sizes.MIB;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import csi.v1.Csi.CapacityRange;
import io.grpc.Status;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class SizesTest {

    private static long choose(long required, long limit) {
        return Sizes.choose(CapacityRange.newBuilder()
                .setRequiredBytes(required)
                .setLimitBytes(limit)
                .build());
    }

    private static void assertCode(Status.Code code, long required, long limit) {
        assertThatThrownBy(() -> choose(required, limit))
                .isInstanceOfSatisfying(
                        CsiException.class, e -> assertThat(e.code()).isEqualTo(code));
    }

    @Test
    void noRangeGivesTheDefault() {
        assertThat(Sizes.choose(CapacityRange.getDefaultInstance()))
                .isEqualTo(Sizes.DEFAULT_BYTES)
                .isEqualTo(GIB);
    }

    @ParameterizedTest
    @CsvSource({
        "1, 0, 1048576",
        "1048576, 0, 1048576",
        "1048577, 0, 2097152",
        "10737418240, 0, 10737418240",
        // a limit alone caps the default
        "0, 104857600, 104857600",
        "0, 2147483648, 1073741824",
        // rounding up to a MiB stops at the limit, falling back to whole 4 KiB blocks
        "5000, 12288, 12288",
        "4096, 4096, 4096",
        "1048577, 1500000, 1499136",
    })
    void sizesAreRequiredRoundedUpAndNeverAboveTheLimit(long required, long limit, long expected) {
        long size = choose(required, limit);
        assertThat(size).isEqualTo(expected);
        assertThat(size % 4096).isZero();
        if (limit > 0) {
            assertThat(size).isLessThanOrEqualTo(limit);
        }
    }

    @Test
    void theSizeIsAlwaysAtLeastTheRequiredBytes() {
        for (long required = 1; required < 64 * MIB; required = required * 3 + 7) {
            assertThat(choose(required, 0)).isGreaterThanOrEqualTo(required);
            assertThat(choose(required, 64 * MIB))
                    .isGreaterThanOrEqualTo(required)
                    .isLessThanOrEqualTo(64 * MIB);
        }
    }

    @Test
    void requiredAboveLimitIsOutOfRange() {
        assertCode(Status.Code.OUT_OF_RANGE, 2 * GIB, GIB);
    }

    @Test
    void noWhole4KibBlockBetweenRequiredAndLimitIsOutOfRange() {
        assertCode(Status.Code.OUT_OF_RANGE, 5000, 6000);
        assertCode(Status.Code.OUT_OF_RANGE, 1000000, 1000000);
        assertCode(Status.Code.OUT_OF_RANGE, 0, 100);
    }

    @Test
    void negativeBytesAreInvalid() {
        assertCode(Status.Code.INVALID_ARGUMENT, -1, 0);
        assertCode(Status.Code.INVALID_ARGUMENT, 0, -1);
    }

    @Test
    void hugeRequestsDoNotOverflowIntoSmallSizes() {
        assertCode(Status.Code.OUT_OF_RANGE, Long.MAX_VALUE, 0);
        assertCode(Status.Code.OUT_OF_RANGE, Long.MAX_VALUE - 10, Long.MAX_VALUE);
    }

    @Test
    void sizesNearTwoToTheSixtyThreeDoNotOverflow() {
        for (long required : new long[] {Long.MAX_VALUE, Long.MAX_VALUE - 1, Sizes.LARGEST + 1}) {
            assertThat(catchThrowableOfType(CsiException.class, () -> choose(required, 0)))
                    .satisfies(e -> assertThat(e.code()).isEqualTo(Status.Code.OUT_OF_RANGE))
                    .hasMessageContaining("more than any volume can hold");
        }
        // Near the largest, rounding up to a MiB would overflow: the size stays in whole 4 KiB blocks.
        assertThat(choose(Sizes.LARGEST, 0)).isEqualTo(Sizes.LARGEST);
        assertThat(choose(Sizes.LARGEST - (1 << 20), 0)).isEqualTo(Long.MAX_VALUE / (1 << 20) * (1 << 20));
        assertThat(choose(0, Long.MAX_VALUE)).isEqualTo(Sizes.DEFAULT_BYTES);
    }

    @Test
    void aFilesystemsMinimumRaisesTheSizeWithinTheLimit() {
        long xfs = 300L << 20;
        CapacityRange small =
                CapacityRange.newBuilder().setRequiredBytes(16L << 20).build();
        assertThat(Sizes.choose(small, xfs)).isEqualTo(xfs);
        assertThat(Sizes.choose(small.toBuilder().setLimitBytes(1L << 30).build(), xfs))
                .isEqualTo(xfs);
        assertThat(Sizes.choose(
                        CapacityRange.newBuilder().setRequiredBytes(1L << 30).build(), xfs))
                .isEqualTo(1L << 30);
        assertThat(catchThrowableOfType(
                        CsiException.class,
                        () -> Sizes.choose(
                                small.toBuilder().setLimitBytes(100L << 20).build(), xfs)))
                .satisfies(e -> assertThat(e.code()).isEqualTo(Status.Code.OUT_OF_RANGE))
                .hasMessageContaining("needs at least " + xfs);
    }
}
