package dev.blockpool.host;

import dev.blockpool.common.StorageException;
import dev.blockpool.host.filesystems.FilesystemRequest;
import dev.blockpool.host.filesystems.SafeFormatAndMount;
import dev.blockpool.host.loops.LoopAttachments;
import dev.blockpool.host.mounts.MountInfo;
import dev.blockpool.host.mounts.MountOwner;
import dev.blockpool.host.mounts.MountTable;
import dev.blockpool.host.mounts.Mounter;
import dev.blockpool.host.mounts.PathState;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * NodeStage and NodeUnstage on the host: a filesystem volume is mounted once at the staging
 * path (the node's global mount); a block volume only gets its loop device.
 */
public final class Staging {

    private final LoopAttachments loops;
    private final SafeFormatAndMount formatAndMount;
    private final Mounter mounter;
    private final MountTable table;

    public Staging(LoopAttachments loops, SafeFormatAndMount formatAndMount, Mounter mounter, MountTable table) {
        this.loops = loops;
        this.formatAndMount = formatAndMount;
        this.mounter = mounter;
        this.table = table;
    }

    /**
     * A block volume is staged by its loop device alone; its staging path is judged as a
     * filesystem's is, so that the unstage that follows can never be refused for it.
     */
    public void stageBlock(Path image, Path staging, boolean readOnly) {
        Optional<MountInfo> mount = table.at(staging);
        if (mount.isPresent() && loops.ownerOf(mount.get(), image) != MountOwner.THIS_VOLUME) {
            throw StorageException.conflict("%s already has another filesystem mounted", staging);
        }
        loops.acquire(image, readOnly);
    }

    public void stageFilesystem(Path image, Path staging, FilesystemRequest request) {
        formatAndMount.mountStaged(image, staging, request);
    }

    /**
     * Unmounts the staging path if this volume is there, then detaches the image's devices. A
     * filesystem volume that is not staged at this path but at another is left as it is: there
     * is nothing to undo here.
     */
    public void unstage(Path image, Path staging) {
        Optional<MountInfo> mount = table.at(staging);
        if (mount.isEmpty()) {
            List<MountInfo> users = loops.usersOf(image);
            if (!users.isEmpty() && users.stream().noneMatch(LoopAttachments::isDeviceNodeBind)) {
                return;
            }
        }
        if (mount.isPresent()) {
            MountOwner owner = loops.ownerOf(mount.get(), image);
            if (owner == MountOwner.OTHER) {
                // Another volume at the path. Stage and publish answer ALREADY_EXISTS, as the spec
                // asks; it names no code for this case in a teardown, where ALREADY_EXISTS would
                // make no sense. FAILED_PRECONDITION: the caller's view of the node is wrong, and
                // nothing was touched. Unpublish answers the same.
                throw StorageException.precondition("%s holds another filesystem, not this volume's", staging);
            }
            if (owner == MountOwner.THIS_VOLUME) {
                List<Path> published = table.ofDevice(mount.get().device()).stream()
                        .map(MountInfo::mountPoint)
                        .filter(p -> !p.equals(mount.get().mountPoint()))
                        .toList();
                if (!published.isEmpty()) {
                    throw StorageException.precondition(
                            "the volume is still published at %s; unpublish it first", published);
                }
            }
            mounter.unmount(
                    mount.get(), owner == MountOwner.BROKEN || PathState.of(staging) instanceof PathState.Broken);
        }
        loops.releaseAll(image);
    }

    /** Whether anything is mounted at the path. */
    public boolean isMountPoint(Path path) {
        return table.at(path).isPresent();
    }
}
