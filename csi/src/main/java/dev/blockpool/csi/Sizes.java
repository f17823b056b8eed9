package dev.blockpool.csi;

import csi.v1.Csi.CapacityRange;

/** Turns a CSI capacity range into an image size. */
public final class Sizes {

    public static final long MIB = 1024 * 1024;
    public static final long GIB = 1024 * MIB;
    public static final long DEFAULT_BYTES = GIB;
    /** Loop devices work in 512-byte sectors and filesystems in 4 KiB blocks: sizes are whole MiB when possible. */
    private static final long ALIGNMENT = MIB;

    private static final long MIN_ALIGNMENT = 4096;
    /** The largest size of whole 4 KiB blocks a file offset can express; rounding past it would overflow. */
    public static final long LARGEST = Long.MAX_VALUE / MIN_ALIGNMENT * MIN_ALIGNMENT;

    private Sizes() {}

    /**
     * The most a volume can be asked for within {@code bytes} and be given no more: sizes round up
     * to the alignment, so capacity is told rounded down to it.
     */
    public static long roundDown(long bytes) {
        return bytes / ALIGNMENT * ALIGNMENT;
    }

    /** The size to provision: the required bytes (or the default) rounded up to a MiB, within the limit. */
    public static long choose(CapacityRange range) {
        return choose(range, 0);
    }

    /**
     * Like {@link #choose(CapacityRange)}, and at least {@code minimum} (what the volume's
     * filesystem can be made on): a request may be given more than it asks, never more than its
     * limit.
     */
    public static long choose(CapacityRange range, long minimum) {
        long limit = range.getLimitBytes();
        if (limit > 0 && minimum > limit) {
            throw CsiException.outOfRange(
                    "the volume's filesystem needs at least %d bytes; limit_bytes %d is less", minimum, limit);
        }
        long size = chooseWithin(range);
        return size >= minimum
                ? size
                : chooseWithin(range.toBuilder().setRequiredBytes(minimum).build());
    }

    private static long chooseWithin(CapacityRange range) {
        long required = range.getRequiredBytes();
        long limit = range.getLimitBytes();
        if (required < 0 || limit < 0) {
            throw CsiException.invalidArgument(
                    "capacity_range must not be negative (required %d, limit %d)", required, limit);
        }
        if (limit > 0 && required > limit) {
            throw CsiException.outOfRange("required_bytes %d exceeds limit_bytes %d", required, limit);
        }
        if (required > LARGEST) {
            throw CsiException.outOfRange(
                    "required_bytes %d is more than any volume can hold (at most %d bytes)", required, LARGEST);
        }
        long wanted = required > 0 ? required : (limit > 0 ? Math.min(DEFAULT_BYTES, limit) : DEFAULT_BYTES);
        long size = wanted > LARGEST - ALIGNMENT ? LARGEST : roundUp(wanted, ALIGNMENT);
        if (limit > 0 && size > limit) {
            size = limit / MIN_ALIGNMENT * MIN_ALIGNMENT;
        }
        if (size < Math.max(required, MIN_ALIGNMENT)) {
            throw CsiException.outOfRange(
                    "no size of whole 4 KiB blocks lies between %d and %d bytes", required, limit);
        }
        return size;
    }

    private static long roundUp(long value, long unit) {
        return Math.ceilDiv(value, unit) * unit;
    }
}
