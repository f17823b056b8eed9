package dev.blockpool.controller;

import dev.blockpool.common.IoLimits;
import dev.blockpool.common.Quoting;
import dev.blockpool.csi.CsiException;
import dev.blockpool.csi.CsiKeys;
import dev.blockpool.csi.Quantity;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The I/O limits a StorageClass and a VolumeAttributesClass set ({@link CsiKeys#READ_IOPS} and the
 * three beside it). A key of the VolumeAttributesClass wins over the StorageClass's; one neither
 * sets, or set to {@code 0} or {@code unlimited}, is no limit. What the kernel's throttle cannot
 * take, and what would stall a file system, is INVALID_ARGUMENT naming the key and the bound.
 */
final class IoLimitParameters {

    static final List<String> KEYS = List.of(
            CsiKeys.READ_IOPS, CsiKeys.WRITE_IOPS, CsiKeys.READ_BYTES_PER_SECOND, CsiKeys.WRITE_BYTES_PER_SECOND);

    /**
     * The fewest operations per second a limit allows. One fsync of a journalling file system
     * takes several of the writer's own operations (its data, then the journal's wait); at fewer
     * than 10 a second, every synchronous write of the pod stalls for a large part of a second,
     * and many applications time out.
     */
    static final long MIN_IOPS = 10;

    /**
     * The most operations per second the kernel's throttle holds: it keeps them in 32 bits, and its
     * largest, 4294967295, means no limit (cgroup v1 would cut a larger value silently).
     */
    static final long MAX_IOPS = 0xFFFF_FFFEL;

    /**
     * The fewest bytes per second a limit allows: 1 MiB. A loop device takes requests of up to a
     * little over 1 MiB (its max_sectors_kb, 1280 by default), and the throttle holds each one
     * whole until the limit lets it pass; below 1 MiB per second single requests wait seconds,
     * with their writer stuck in the kernel, which the hung-task watchdog reports.
     */
    static final long MIN_BYTES_PER_SECOND = 1L << 20;

    private static final String NO_LIMIT = "unlimited";
    private static final Pattern WHOLE_NUMBER = Pattern.compile("[0-9]+");
    private static final Pattern NUMBER = Pattern.compile("[+-]?[0-9]*\\.?[0-9]+([eE][+-]?[0-9]+)?");

    private IoLimitParameters() {}

    /** The limits of a volume whose StorageClass has {@code storageClass} and whose VolumeAttributesClass has {@code attributesClass}. */
    static IoLimits of(Map<String, String> storageClass, Map<String, String> attributesClass) {
        long[] values = new long[KEYS.size()];
        for (int i = 0; i < values.length; i++) {
            String key = KEYS.get(i);
            String value = attributesClass.containsKey(key) ? attributesClass.get(key) : storageClass.get(key);
            values[i] = value == null ? 0 : parse(key, value);
        }
        return new IoLimits(values[0], values[1], values[2], values[3]);
    }

    /** Checks the limits a class sets, without a volume: INVALID_ARGUMENT for the first that is infeasible. */
    static void check(Map<String, String> parameters) {
        of(Map.of(), parameters);
    }

    private static long parse(String key, String text) {
        String value = text.strip();
        if (value.equals("0") || value.toLowerCase(Locale.ROOT).equals(NO_LIMIT)) {
            return 0;
        }
        if (value.startsWith("-")) {
            throw CsiException.invalidArgument(
                    "%s %s is negative: give a limit above 0, or \"%s\"", key, Quoting.quote(text), NO_LIMIT);
        }
        return key.endsWith("IOPS") ? iops(key, text, value) : bytesPerSecond(key, text, value);
    }

    private static long iops(String key, String text, String value) {
        if (!WHOLE_NUMBER.matcher(value).matches()) {
            throw CsiException.invalidArgument(
                    "%s %s is %s: give a whole number of I/O operations per second such as 500, or \"%s\"",
                    key,
                    Quoting.quote(text),
                    NUMBER.matcher(value).matches() ? "not a whole number" : "not a number",
                    NO_LIMIT);
        }
        if (value.length() > 10 || Long.parseLong(value) > MAX_IOPS) {
            throw CsiException.invalidArgument(
                    "%s %s is more than %d, the most the kernel's I/O throttle takes; for no limit give \"%s\"",
                    key, Quoting.quote(text), MAX_IOPS, NO_LIMIT);
        }
        long iops = Long.parseLong(value);
        if (iops < MIN_IOPS) {
            throw CsiException.invalidArgument(
                    "%s %s is below %d: with fewer I/O operations per second every synchronous write of "
                            + "the volume's pods stalls; give at least %d, or \"%s\"",
                    key, Quoting.quote(text), MIN_IOPS, MIN_IOPS, NO_LIMIT);
        }
        return iops;
    }

    private static long bytesPerSecond(String key, String text, String value) {
        long bytes = Quantity.parseBytesAtMost(
                key,
                value,
                Long.MAX_VALUE,
                "the most bytes per second a limit can say; for no limit give \"" + NO_LIMIT + "\"");
        if (bytes < MIN_BYTES_PER_SECOND) {
            throw CsiException.invalidArgument(
                    "%s %s is below 1Mi (%d bytes per second): a single request of the volume's loop device "
                            + "would wait seconds; give at least 1Mi, or \"%s\"",
                    key, Quoting.quote(text), MIN_BYTES_PER_SECOND, NO_LIMIT);
        }
        return bytes;
    }
}
