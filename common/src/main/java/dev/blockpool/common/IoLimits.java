package dev.blockpool.common;

/**
 * How fast the pods using a volume may read and write it, as the kernel's I/O throttle counts it
 * on the volume's loop device: operations and bytes per second, each direction apart. 0 is no
 * limit. The volume's record holds them; each node applies them to the pods it publishes the
 * volume to.
 */
public record IoLimits(long readIops, long writeIops, long readBytesPerSecond, long writeBytesPerSecond) {

    /** No limit in either direction. */
    public static final IoLimits NONE = new IoLimits(0, 0, 0, 0);

    public IoLimits {
        if (readIops < 0 || writeIops < 0 || readBytesPerSecond < 0 || writeBytesPerSecond < 0) {
            throw new IllegalArgumentException("an I/O limit is never negative");
        }
    }

    /** Whether nothing is limited. */
    public boolean none() {
        return equals(NONE);
    }

    @Override
    public String toString() {
        return none()
                ? "no I/O limit"
                : "read %s, %s; write %s, %s"
                        .formatted(
                                per(readIops, "IOPS"),
                                per(readBytesPerSecond, "B/s"),
                                per(writeIops, "IOPS"),
                                per(writeBytesPerSecond, "B/s"));
    }

    private static String per(long value, String unit) {
        return value == 0 ? "unlimited " + unit : value + " " + unit;
    }
}
