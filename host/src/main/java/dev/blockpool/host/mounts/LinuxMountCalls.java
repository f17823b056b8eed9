package dev.blockpool.host.mounts;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.Descriptors;
import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import dev.blockpool.common.TestKillPoint;
import java.nio.file.Path;
import java.time.Duration;

/**
 * {@link MountCalls} through mount(2) and umount2(2) on descriptors opened without following
 * symlinks. A filesystem's mount reads it and an unmount may write it back, which hangs when its
 * loop device's image is on a dead NFS pool: those calls are made with their opens through
 * {@link BlockingCalls}. A bind mount, and a change of a bind's flags, only copy or change a
 * mount of what is mounted already and read nothing from its filesystem: they are made on the
 * calling thread, which spares a publish two hand-offs between threads.
 *
 * <p>A bind with flags (a read-only publish) is one clone of the source's mount, given its
 * flags while detached and then moved into place, where the kernel has the new mount API
 * (Linux 5.12); before it, a bind and a remount, which a kill between the two leaves read-write:
 * the publish's repeat then sets the flags (docs/architecture.md, "The node").
 */
final class LinuxMountCalls implements MountCalls {

    /** Whether the kernel has mount_setattr(2), and so open_tree(2) and move_mount(2): asked once. */
    private static final class NewMountApi {
        static final boolean PRESENT = present();

        private static boolean present() {
            try {
                MountSyscalls.mountSetattr(-1, 0, 0);
                return true; // cannot succeed on no descriptor; a kernel that has the call says EBADF
            } catch (Libc.ErrnoException e) {
                return e.errno() != Libc.ENOSYS && e.errno() != Libc.EPERM;
            }
        }
    }

    /** A mount may replay a journal and an unmount writes back what is dirty: minutes on a slow pool, yet bounded. */
    private static final Duration DEADLINE = Duration.ofMinutes(5);

    private final BlockingCalls blocking;

    LinuxMountCalls(BlockingCalls blocking) {
        this.blocking = blocking;
    }

    @Override
    public void mount(String source, Path target, TargetKind kind, String type, long flags, String data) {
        if ((flags & MountSyscalls.MS_BIND) != 0) {
            mountNow(source, target, kind, type, flags, data);
            return;
        }
        blocking.run(
                DEADLINE,
                "mount(2) of " + source + " at " + target,
                () -> mountNow(source, target, kind, type, flags, data));
    }

    private static void mountNow(String source, Path target, TargetKind kind, String type, long flags, String data) {
        boolean bind = (flags & MountSyscalls.MS_BIND) != 0;
        // A bind's source is opened the same way, so it too is exactly what was checked.
        int sourceFd = bind ? open(Path.of(source), null) : -1;
        try {
            int targetFd = open(target, kind);
            try {
                MountSyscalls.mount(
                        bind ? MountSyscalls.fdPath(sourceFd) : source,
                        MountSyscalls.fdPath(targetFd),
                        type,
                        flags,
                        data);
            } catch (Libc.ErrnoException e) {
                if (e.errno() == Libc.EBUSY) {
                    // The filesystem is mounted elsewhere on this node with other flags (read-write
                    // where read-only is asked): the caller's view of the node is wrong, not the host.
                    throw StorageException.precondition(
                            "cannot mount %s at %s: it is mounted elsewhere on this node "
                                    + "in a way this mount cannot share (%s)",
                            source, target, e.getMessage());
                }
                throw StorageException.internal("cannot mount %s at %s: %s", source, target, e.getMessage());
            } finally {
                Libc.close(targetFd);
            }
        } finally {
            if (sourceFd >= 0) {
                Libc.close(sourceFd);
            }
        }
    }

    @Override
    public boolean atomicBinds() {
        return NewMountApi.PRESENT;
    }

    @Override
    public void bindWithFlags(String source, Path target, TargetKind kind, long flags) {
        int sourceFd = open(Path.of(source), null);
        try {
            int targetFd = open(target, kind);
            try {
                int tree = MountSyscalls.openTreeClone(sourceFd);
                try {
                    TestKillPoint.reached("publish.before-flags");
                    MountSyscalls.mountSetattr(
                            tree, attributes(flags), (flags & ATIME_FLAGS) != 0 ? MountSyscalls.MOUNT_ATTR__ATIME : 0);
                    MountSyscalls.moveMount(tree, targetFd);
                } finally {
                    Libc.close(tree); // once moved, the mount stays; a copy never moved is dropped with it
                }
            } catch (Libc.ErrnoException e) {
                throw StorageException.internal("cannot bind %s at %s: %s", source, target, e.getMessage());
            } finally {
                Libc.close(targetFd);
            }
        } finally {
            Libc.close(sourceFd);
        }
    }

    private static final long ATIME_FLAGS =
            MountSyscalls.MS_NOATIME | MountSyscalls.MS_STRICTATIME | MountSyscalls.MS_RELATIME;

    /** mount(2)'s per-mount flags as mount_setattr(2)'s attributes. */
    static long attributes(long flags) {
        long attributes = 0;
        attributes |= (flags & MountSyscalls.MS_RDONLY) != 0 ? MountSyscalls.MOUNT_ATTR_RDONLY : 0;
        attributes |= (flags & MountSyscalls.MS_NOSUID) != 0 ? MountSyscalls.MOUNT_ATTR_NOSUID : 0;
        attributes |= (flags & MountSyscalls.MS_NODEV) != 0 ? MountSyscalls.MOUNT_ATTR_NODEV : 0;
        attributes |= (flags & MountSyscalls.MS_NOEXEC) != 0 ? MountSyscalls.MOUNT_ATTR_NOEXEC : 0;
        attributes |= (flags & MountSyscalls.MS_NODIRATIME) != 0 ? MountSyscalls.MOUNT_ATTR_NODIRATIME : 0;
        if ((flags & MountSyscalls.MS_NOATIME) != 0) {
            attributes |= MountSyscalls.MOUNT_ATTR_NOATIME;
        } else if ((flags & MountSyscalls.MS_STRICTATIME) != 0) {
            attributes |= MountSyscalls.MOUNT_ATTR_STRICTATIME;
        } else if ((flags & MountSyscalls.MS_RELATIME) != 0) {
            attributes |= MountSyscalls.MOUNT_ATTR_RELATIME;
        }
        return attributes;
    }

    @Override
    public void remountBind(Path target, TargetKind kind, long flags) {
        remountNow(target, flags);
    }

    private static void remountNow(Path target, long flags) {
        // Opened afresh: now the root of the new mount (for a device node's bind, the device node,
        // whatever kind the target was). It cannot have been swapped meanwhile: a mount point
        // cannot be renamed or removed.
        int fd = open(target, null);
        try {
            MountSyscalls.mount(
                    null,
                    MountSyscalls.fdPath(fd),
                    null,
                    MountSyscalls.MS_REMOUNT | MountSyscalls.MS_BIND | flags,
                    null);
        } catch (Libc.ErrnoException e) {
            throw StorageException.internal(
                    "cannot change the flags of the bind mount at %s: %s", target, e.getMessage());
        } finally {
            Libc.close(fd);
        }
    }

    @Override
    public int unmount(Path target, boolean detach) {
        return blocking.call(DEADLINE, "umount2(2) of " + target, () -> {
            try {
                MountSyscalls.umount2(
                        target.toString(), MountSyscalls.UMOUNT_NOFOLLOW | (detach ? MountSyscalls.MNT_DETACH : 0));
                return 0;
            } catch (Libc.ErrnoException e) {
                return e.errno();
            }
        });
    }

    /**
     * An O_PATH descriptor of exactly the object at {@code path}, of the kind asked (any kind for
     * null). Symlinks among the parent directories (a kubelet directory on another disk) are
     * resolved now, when they all exist; from there on, none is followed.
     */
    private static int open(Path path, TargetKind kind) {
        int fd;
        try {
            fd = Libc.openPathNoSymlinks(MountTable.asListed(path).toString(), kind == TargetKind.DIRECTORY);
        } catch (Libc.ErrnoException e) {
            if (e.errno() == Libc.ELOOP) {
                throw StorageException.precondition(
                        "%s is or passes through a symlink; the driver mounts only on "
                                + "the path it was given, never where a symlink points",
                        path);
            }
            throw StorageException.precondition("cannot open %s to mount on it: %s", path, e.getMessage());
        }
        Libc.Stat stat = Descriptors.statOrClose(fd, path);
        boolean fits = kind == null || (kind == TargetKind.DIRECTORY ? stat.isDirectory() : stat.isRegularFile());
        if (!fits) {
            Libc.close(fd);
            throw StorageException.precondition(
                    "%s is not a %s; nothing is mounted on it",
                    path, kind == TargetKind.DIRECTORY ? "directory" : "regular file");
        }
        return fd;
    }
}
