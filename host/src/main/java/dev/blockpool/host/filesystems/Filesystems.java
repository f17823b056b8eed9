package dev.blockpool.host.filesystems;

import dev.blockpool.common.FilesystemAnswer;
import dev.blockpool.common.FsType;
import dev.blockpool.host.loops.LoopDevice;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Optional;

/** Filesystems on block devices: probe, format, check, grow (mounted or not), and measure. */
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

    /**
     * Grows a mounted filesystem to the size of its device. Returns false, having changed
     * nothing, when the kernel refuses this process the online growth of an ext4 filesystem
     * (it needs CAP_SYS_RESOURCE): {@link #growUnmounted} grows it at its next stage.
     */
    boolean growMounted(Path device, Path mountPoint, FsType type);

    /**
     * Grows the unmounted filesystem on {@code device} to the device's size when one more of its
     * blocks fits there: ext4 is checked in full (e2fsck -f -p) and grown (resize2fs) with
     * {@code marker} on disk meanwhile; xfs, which grows only while mounted, is left as it is.
     * Returns whether it grew it.
     */
    boolean growUnmounted(LoopDevice device, FsType type, Path marker);

    /**
     * When {@code marker} says a growth of the ext4 on the unmounted {@code device} was cut
     * short, repairs what it left (e2fsck -f -y) and removes the marker; nothing otherwise.
     */
    void repairInterruptedGrowth(Path device, Path marker);

    /**
     * Bytes and inodes of the filesystem mounted at {@code path}, which must be one of this
     * driver's volumes: asked on the calling thread, which a volume's own ext4 or xfs answers
     * from memory (any other filesystem may hang).
     */
    FsStats stats(Path path);

    /** How the filesystem mounted at {@code mountPoint} answers, within {@link FilesystemAnswer#DEADLINE}. */
    FilesystemAnswer answer(Path mountPoint);

    /** The errors the kernel recorded in the mounted ext4 filesystem on {@code device}; empty when none. */
    Optional<RecordedErrors> recordedErrors(LoopDevice device);

    /**
     * ext4's error record, which the kernel keeps in the superblock from the first error until
     * e2fsck clears it: how many, and the first one's time and the kernel function that met it.
     */
    record RecordedErrors(long count, Optional<Instant> first, String function) {}
}
