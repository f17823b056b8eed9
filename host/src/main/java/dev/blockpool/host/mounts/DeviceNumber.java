package dev.blockpool.host.mounts;

/** A device number, {@code major:minor}, as in mountinfo, {@code /sys/block/<dev>/dev} and {@code st_rdev}. */
public record DeviceNumber(int major, int minor) {

    public static DeviceNumber parse(String text) {
        int colon = text.indexOf(':');
        if (colon <= 0) {
            throw new IllegalArgumentException("not a major:minor device number: " + text);
        }
        return new DeviceNumber(
                Integer.parseInt(text.substring(0, colon).strip()),
                Integer.parseInt(text.substring(colon + 1).strip()));
    }

    /** Decodes Linux's {@code dev_t} encoding (what {@code stat} reports as {@code st_rdev}). */
    public static DeviceNumber fromDevT(long dev) {
        int major = (int) (((dev >>> 32) & 0xfffff000L) | ((dev >>> 8) & 0xfffL));
        int minor = (int) (((dev >>> 12) & 0xffffff00L) | (dev & 0xffL));
        return new DeviceNumber(major, minor);
    }

    @Override
    public String toString() {
        return major + ":" + minor;
    }
}
