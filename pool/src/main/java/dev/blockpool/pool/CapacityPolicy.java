package dev.blockpool.pool;

import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the pool may promise: its filesystem's size times {@code overcommitRatio}, less
 * {@code reserve} for its own records. A volume promises its size; a snapshot the blocks it holds,
 * which become its own when its volume rewrites what they share. At a ratio of 1 (the default)
 * every promise is backed by the filesystem, so no write into a sparse volume can find the pool
 * full; above 1 the pool is thin, and {@code warnBelow} is the free space under which its health
 * says it may fill (see {@link PoolCapacity}).
 */
public record CapacityPolicy(double overcommitRatio, Amount reserve, Amount warnBelow) {

    /** No over-commit, 1 % kept for the records, a warning below 10 % free. */
    public static final CapacityPolicy DEFAULT = new CapacityPolicy(1.0, Amount.parse("1%"), Amount.parse("10%"));

    public CapacityPolicy {
        if (!(overcommitRatio >= 1.0) || overcommitRatio > 100.0) {
            throw new IllegalArgumentException("the over-commit ratio must be from 1 (none) to 100");
        }
    }

    /** A thin pool that promises {@code ratio} times its size, otherwise as the default. */
    public static CapacityPolicy overcommitted(double ratio) {
        return new CapacityPolicy(ratio, DEFAULT.reserve, DEFAULT.warnBelow);
    }

    /** The most the pool may promise on a filesystem of {@code sizeBytes}; never negative. */
    public long limitBytes(long sizeBytes) {
        double limit = sizeBytes * overcommitRatio - reserve.of(sizeBytes);
        return limit >= Long.MAX_VALUE ? Long.MAX_VALUE : Math.max(0, (long) limit);
    }

    /** Whether the pool may promise more than its filesystem holds. */
    public boolean thin() {
        return overcommitRatio > 1.0;
    }

    /** A number of bytes, or a percentage of the pool filesystem's size. */
    public record Amount(long bytes, double percent) {

        private static final Pattern FORMAT = Pattern.compile("(\\d+(?:\\.\\d+)?)(%|Ki|Mi|Gi|Ti|k|M|G|T)?");
        private static final Map<String, Long> UNITS = Map.of(
                "Ki",
                1L << 10,
                "Mi",
                1L << 20,
                "Gi",
                1L << 30,
                "Ti",
                1L << 40,
                "k",
                1_000L,
                "M",
                1_000_000L,
                "G",
                1_000_000_000L,
                "T",
                1_000_000_000_000L);

        public Amount {
            if (bytes < 0 || percent < 0 || percent > 100) {
                throw new IllegalArgumentException("an amount is from 0 bytes to 100 %");
            }
        }

        /**
         * {@code 5%}, or bytes with an optional Kubernetes suffix ({@code 512Mi}, {@code 2G});
         * IllegalArgumentException, saying what is expected, otherwise.
         */
        public static Amount parse(String text) {
            Matcher matcher = FORMAT.matcher(text.strip());
            if (!matcher.matches()) {
                throw new IllegalArgumentException(
                        "expected a percentage of the pool's size (5%) or bytes (512Mi, 2Gi, 1000000)");
            }
            double number = Double.parseDouble(matcher.group(1));
            String unit = matcher.group(2);
            if ("%".equals(unit)) {
                return new Amount(0, number);
            }
            double bytes = number * (unit == null ? 1 : UNITS.get(unit));
            if (bytes >= Long.MAX_VALUE) {
                throw new IllegalArgumentException("more bytes than any filesystem holds");
            }
            return new Amount((long) bytes, 0);
        }

        /** The bytes this amount is of a pool filesystem of {@code sizeBytes}. */
        public long of(long sizeBytes) {
            return percent > 0 ? (long) (sizeBytes * percent / 100) : bytes;
        }

        @Override
        public String toString() {
            return percent > 0 ? String.format(Locale.ROOT, "%s%%", trim(percent)) : bytes + " bytes";
        }

        private static String trim(double value) {
            return value == Math.rint(value) ? Long.toString((long) value) : Double.toString(value);
        }
    }
}
