package dev.blockpool.host;

import java.nio.file.Path;
import java.util.Optional;

/**
 * NodeGetVolumeStats on the host: usage of a volume where it is mounted or bound. What is wrong
 * with it is {@link MountHealth}'s to say.
 */
public final class VolumeStats {

    /** Usage of a volume at a path; empty parts when it cannot be measured (its device is gone). */
    public record Usage(Optional<FsStats> filesystem, Optional<Long> blockBytes) {
    }

    private final LoopAttachments loops;
    private final Filesystems filesystems;
    private final MountTable table;

    public VolumeStats(LoopAttachments loops, Filesystems filesystems, MountTable table) {
        this.loops = loops;
        this.filesystems = filesystems;
        this.table = table;
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
            return Optional.of(new Usage(Optional.empty(), loops.loopOf(mount.get()).map(LoopDevice::sizeBytes)));
        }
        return Optional.of(new Usage(Optional.of(filesystems.stats(path)), Optional.empty()));
    }
}
