package dev.blockpool.host.filesystems;

import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import java.nio.file.Path;

/** System calls on a filesystem made through a descriptor of its mount point, opened without following a symlink. */
final class MountPointCalls {

    interface OnDescriptor {
        boolean call(int fd);
    }

    private MountPointCalls() {}

    static boolean onMountPoint(Path mountPoint, OnDescriptor call) {
        int fd;
        try {
            fd = Libc.open(mountPoint.toString(), Libc.O_RDONLY | Libc.O_DIRECTORY | Libc.O_NOFOLLOW, 0);
        } catch (Libc.ErrnoException e) {
            throw StorageException.internal("cannot open the mount point %s: %s", mountPoint, e.getMessage());
        }
        try {
            return call.call(fd);
        } finally {
            Libc.close(fd);
        }
    }
}
