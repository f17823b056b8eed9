package dev.blockpool.host;

import dev.blockpool.common.FsType;
import java.nio.file.Path;

/** Filesystems on block devices: probe, format, check, grow, and measure. */
public interface Filesystems {

    /** What is on the device; throws when the probe itself failed (never "empty" on doubt). */
    Probe probe(Path device);

    /** Makes a filesystem; callers format only a device whose {@link #probe} was empty. */
    void format(Path device, FsType type);

    /**
     * Prepares an unmounted filesystem for a read-write mount: ext4 is checked and safely
     * repaired (e2fsck -p); xfs is left to the mount, which replays its log.
     */
    void check(Path device, FsType type);

    /** Grows a mounted filesystem to the size of its device. */
    void growMounted(Path device, Path mountPoint, FsType type);

    /** Bytes and inodes of the filesystem mounted at {@code path}. */
    FsStats stats(Path path);
}
