package dev.blockpool.host;

import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import dev.blockpool.host.filesystems.Filesystems;
import dev.blockpool.host.filesystems.FsStats;
import dev.blockpool.host.loops.LoopAttachments;
import dev.blockpool.host.loops.LoopDevice;
import dev.blockpool.host.mounts.DeviceNumber;
import dev.blockpool.host.mounts.MountInfo;
import dev.blockpool.host.mounts.MountOwner;
import dev.blockpool.host.mounts.MountTable;
import dev.blockpool.host.mounts.PathState;
import java.nio.file.Path;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * NodeGetVolumeStats on the host: usage of a volume where it is mounted or bound. What is wrong
 * with it is {@link MountHealth}'s to say.
 */
public final class VolumeStats {

    /** Usage of a volume at a path; empty parts when it cannot be measured (its device is gone). */
    public record Usage(Optional<FsStats> filesystem, Optional<Long> blockBytes) {}

    private final LoopAttachments loops;
    private final Filesystems filesystems;
    private final MountTable table;

    public VolumeStats(LoopAttachments loops, Filesystems filesystems, MountTable table) {
        this.loops = loops;
        this.filesystems = filesystems;
        this.table = table;
    }

    /**
     * The usage when the path is, as the kernel has it in memory, a mount of the volume: the path
     * looked up from the kernel's caches alone, its mount and device told by statx without asking
     * its filesystem, and only then statfs(2) of the volume's own filesystem (or sysfs for a raw
     * block volume's size). Never waits, whatever is mounted on or above the path; empty whenever
     * anything is short of that (a name not cached, a symlink, a broken or foreign mount, nothing
     * mounted), which {@link #usage} then tells apart.
     */
    public Optional<Usage> usageFromCaches(Path image, Path path) {
        OptionalInt opened;
        try {
            opened = Libc.openPathCached(path.toString());
        } catch (Libc.ErrnoException e) {
            return Optional.empty();
        }
        if (opened.isEmpty()) {
            return Optional.empty();
        }
        int fd = opened.getAsInt();
        try {
            Libc.Stat stat = Libc.statCached(fd);
            if (!stat.mountRoot().orElse(false)) {
                return Optional.empty();
            }
            if (stat.isDirectory()
                    && loops.knownBoundDevice(new DeviceNumber(stat.devMajor(), stat.devMinor()), image)
                            .isPresent()) {
                return Optional.of(new Usage(Optional.of(FsStats.of(Libc.fstatfs(fd))), Optional.empty()));
            }
            if (stat.isBlockDevice()) {
                return loops.knownBoundDevice(new DeviceNumber(stat.rdevMajor(), stat.rdevMinor()), image)
                        .map(device -> new Usage(Optional.empty(), Optional.of(device.sizeBytes())));
            }
            return Optional.empty();
        } catch (Libc.ErrnoException e) {
            return Optional.empty();
        } finally {
            Libc.close(fd);
        }
    }

    /** Empty when the volume is not mounted at the path. */
    public Optional<Usage> usage(Path image, Path path) {
        Optional<MountInfo> mount = table.at(path);
        if (mount.isEmpty()) {
            return Optional.empty();
        }
        // A filesystem's owner is told by its loop device's backing file alone; the device itself
        // is read only for a raw block volume's size.
        MountOwner owner = loops.ownerOf(mount.get(), image);
        // Another filesystem's path is not looked at: it may be a dead NFS or FUSE mount.
        if (owner == MountOwner.OTHER) {
            return Optional.empty();
        }
        PathState state = PathState.of(path);
        if (state instanceof PathState.Missing) {
            return Optional.empty();
        }
        if (owner == MountOwner.BROKEN || state instanceof PathState.Broken) {
            return Optional.of(new Usage(Optional.empty(), Optional.empty()));
        }
        if (state instanceof PathState.File) {
            // detached since the owner was read: no size to give, as for a broken mount
            return Optional.of(
                    new Usage(Optional.empty(), loops.loopOf(mount.get()).map(LoopDevice::sizeBytes)));
        }
        try {
            return Optional.of(new Usage(Optional.of(filesystems.stats(path)), Optional.empty()));
        } catch (StorageException e) {
            if (e.kind() == StorageException.Kind.NOT_FOUND) {
                return Optional.empty(); // unpublished meanwhile: not mounted there, as for any such path
            }
            throw e;
        }
    }
}
