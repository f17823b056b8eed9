package dev.blockpool.host;

import dev.blockpool.common.FsType;
import dev.blockpool.common.StorageException;
import dev.blockpool.host.filesystems.Filesystems;
import dev.blockpool.host.loops.LoopAttachments;
import dev.blockpool.host.loops.LoopDevice;
import dev.blockpool.host.mounts.MountInfo;
import dev.blockpool.host.mounts.MountOwner;
import dev.blockpool.host.mounts.MountTable;
import dev.blockpool.host.mounts.PathState;
import java.nio.file.Path;

/**
 * NodeExpandVolume on the host: the loop devices pick up the grown image, and a mounted
 * filesystem grows online. The filesystem of a volume that is not mounted is never grown here
 * (xfs grows only while mounted, and a private mount elsewhere would outlive a crash); kubelet
 * expands it after the next stage. An ext4 whose online growth the kernel refuses the driver
 * (no CAP_SYS_RESOURCE) is PRECONDITION, the spec's "volume in use", which kubelet does not
 * retry while the volume stays mounted: the next stage grows it before mounting it
 * ({@link Filesystems#growUnmounted}).
 */
public final class VolumeResizer {

    private final LoopAttachments loops;
    private final Filesystems filesystems;
    private final MountTable table;

    public VolumeResizer(LoopAttachments loops, Filesystems filesystems, MountTable table) {
        this.loops = loops;
        this.filesystems = filesystems;
        this.table = table;
    }

    /**
     * Refreshes the size of the volume's devices and, when {@code path} is a filesystem mount of
     * the volume, grows the filesystem; a block target needs only the device refreshed. Any
     * other path is NOT_FOUND. Returns the size of the device behind {@code path}.
     */
    public long expand(Path image, Path path, boolean block) {
        MountInfo mount = table.at(path)
                .filter(m -> loops.ownerOf(m, image) == MountOwner.THIS_VOLUME)
                .orElseThrow(() -> StorageException.notFound(
                        "the volume is not mounted at %s: volume_path must be a mount or a block target of it", path));
        LoopDevice mounted = loops.loopOf(mount)
                .orElseThrow(() -> StorageException.notFound("the loop device behind %s went away", path));
        if (mounted.autoclear() || mounted.backingFileDeleted()) {
            throw StorageException.precondition(
                    "%s behind %s was detached or lost its image while in use", mounted.device(), path);
        }
        // The staged device and those of read-only block publishes.
        LoopDevice refreshed = loops.refreshCapacity(image).stream()
                .filter(l -> l.name().equals(mounted.name()))
                .findFirst()
                .orElse(mounted);
        if (block || PathState.of(path) instanceof PathState.File) {
            return refreshed.sizeBytes();
        }
        FsType type = FsType.find(mount.fsType())
                .orElseThrow(() -> StorageException.precondition("cannot grow a %s filesystem", mount.fsType()));
        if (!filesystems.growMounted(refreshed.device(), path, type)) {
            throw StorageException.precondition(
                    "the %s filesystem mounted at %s cannot grow while it is in use: the kernel refuses the driver"
                            + " online growth (it needs CAP_SYS_RESOURCE); it grows to the volume's %d bytes at its"
                            + " next NodeStageVolume, once no pod on this node uses it",
                    type, path, refreshed.sizeBytes());
        }
        return refreshed.sizeBytes();
    }
}
