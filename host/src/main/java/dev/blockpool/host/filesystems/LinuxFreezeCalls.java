package dev.blockpool.host.filesystems;

import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import java.nio.file.Path;

/**
 * {@link FreezeCalls} through the VFS ioctls FIFREEZE and FITHAW (linux/fs.h), made on a
 * descriptor of the mount point opened without following a symlink. Each returns when the kernel
 * does: {@link FilesystemFreezes} makes them on the threads for calls that can hang.
 */
final class LinuxFreezeCalls implements FreezeCalls {

    /** _IOWR('X', 119, int) and _IOWR('X', 120, int); their argument is unused. */
    private static final Libc.Ioctl FIFREEZE = new Libc.Ioctl("FIFREEZE", 0xC0045877L);

    private static final Libc.Ioctl FITHAW = new Libc.Ioctl("FITHAW", 0xC0045878L);

    @Override
    public void freeze(Path mountPoint) {
        MountPointCalls.onMountPoint(mountPoint, fd -> {
            try {
                Libc.ioctl(fd, FIFREEZE, 0L);
            } catch (Libc.ErrnoException e) {
                throw StorageException.internal(
                        "cannot freeze the file system mounted at %s: %s", mountPoint, e.getMessage());
            }
            return true;
        });
    }

    @Override
    public boolean thaw(Path mountPoint) {
        return MountPointCalls.onMountPoint(mountPoint, fd -> {
            try {
                Libc.ioctl(fd, FITHAW, 0L);
                return true;
            } catch (Libc.ErrnoException e) {
                if (e.errno() == Libc.EINVAL) {
                    return false; // not frozen
                }
                throw StorageException.internal(
                        "cannot thaw the file system mounted at %s: %s", mountPoint, e.getMessage());
            }
        });
    }
}
