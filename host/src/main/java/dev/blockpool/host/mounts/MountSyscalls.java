package dev.blockpool.host.mounts;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.blockpool.common.Libc;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * The mount system calls, which only this room makes: mount(2), umount2(2), and the new mount
 * API's open_tree(2), mount_setattr(2) and move_mount(2), with their flags. Bound and called as
 * every call is, through {@link Libc#bind} and {@link Libc#call}: a failure is a
 * {@link Libc.ErrnoException} naming the call.
 */
final class MountSyscalls {

    static final long MS_RDONLY = 1;
    static final long MS_NOSUID = 2;
    static final long MS_NODEV = 4;
    static final long MS_NOEXEC = 8;
    static final long MS_SYNCHRONOUS = 16;
    static final long MS_REMOUNT = 32;
    static final long MS_DIRSYNC = 128;
    static final long MS_NOATIME = 1024;
    static final long MS_NODIRATIME = 2048;
    static final long MS_BIND = 4096;
    static final long MS_RELATIME = 1L << 21;
    static final long MS_STRICTATIME = 1L << 24;
    static final long MS_LAZYTIME = 1L << 25;
    static final int MNT_DETACH = 2;
    static final int UMOUNT_NOFOLLOW = 8;

    /** mount_setattr(2)'s per-mount attributes (linux/mount.h). */
    static final long MOUNT_ATTR_RDONLY = 0x1;

    static final long MOUNT_ATTR_NOSUID = 0x2;
    static final long MOUNT_ATTR_NODEV = 0x4;
    static final long MOUNT_ATTR_NOEXEC = 0x8;
    /** The access-time setting, one of the values below, cleared and set as a whole. */
    static final long MOUNT_ATTR__ATIME = 0x70;

    static final long MOUNT_ATTR_RELATIME = 0x0;
    static final long MOUNT_ATTR_NOATIME = 0x10;
    static final long MOUNT_ATTR_STRICTATIME = 0x20;
    static final long MOUNT_ATTR_NODIRATIME = 0x80;

    /** The new mount API's numbers, from the unified syscall table (Linux 5.2; mount_setattr 5.12). */
    private static final long SYS_OPEN_TREE = 428;

    private static final long SYS_MOVE_MOUNT = 429;
    private static final long SYS_MOUNT_SETATTR = 442;
    private static final long OPEN_TREE_CLONE = 1;
    private static final long MOVE_MOUNT_F_EMPTY_PATH = 0x4;
    private static final long MOVE_MOUNT_T_EMPTY_PATH = 0x40;

    private MountSyscalls() {}

    /** mount(2); a null source, type or data is passed as NULL. */
    static void mount(String source, String target, String type, long flags, String data) {
        Libc.call(
                "mount",
                call -> call.check((int) Mount.HANDLE.invokeExact(
                        call.state(),
                        call.string(source),
                        call.string(target),
                        call.string(type),
                        flags,
                        call.string(data))));
    }

    static void umount2(String target, int flags) {
        Libc.call(
                "umount2",
                call -> call.check((int) Umount2.HANDLE.invokeExact(call.state(), call.string(target), flags)));
    }

    /**
     * open_tree(2) with OPEN_TREE_CLONE of the object behind {@code fd} (not recursive, as a
     * bind without MS_REC): a descriptor of a detached copy of that mount, which nobody sees
     * until {@link #moveMount} attaches it, and which closing the descriptor unmounts again.
     * ENOSYS before Linux 5.2.
     */
    static int openTreeClone(int fd) {
        long tree = Libc.call(
                "open_tree",
                call -> call.check((long) MountApi.THREE.invokeExact(
                        call.state(),
                        SYS_OPEN_TREE,
                        (long) fd,
                        call.string(""),
                        OPEN_TREE_CLONE | Libc.O_CLOEXEC | Libc.AT_EMPTY_PATH)));
        return (int) tree;
    }

    /**
     * mount_setattr(2) of the mount behind {@code fd} alone (not its children): sets the
     * attributes {@code set} and clears {@code clear} (MOUNT_ATTR_*) in one step. ENOSYS before
     * Linux 5.12.
     */
    static void mountSetattr(int fd, long set, long clear) {
        Libc.call("mount_setattr", call -> {
            MemorySegment attr = call.arena().allocate(MountApi.MOUNT_ATTR);
            MountApi.ATTR_SET.set(attr, set);
            MountApi.ATTR_CLR.set(attr, clear);
            return call.check((long) MountApi.FIVE.invokeExact(
                    call.state(),
                    SYS_MOUNT_SETATTR,
                    (long) fd,
                    call.string(""),
                    (long) Libc.AT_EMPTY_PATH,
                    attr,
                    attr.byteSize()));
        });
    }

    /** move_mount(2) of the detached mount behind {@code from} onto the object behind {@code to}. */
    static void moveMount(int from, int to) {
        Libc.call(
                "move_mount",
                call -> call.check((long) MountApi.FIVE.invokeExact(
                        call.state(),
                        SYS_MOVE_MOUNT,
                        (long) from,
                        call.string(""),
                        (long) to,
                        call.string(""),
                        MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH)));
    }

    /** The path by which mount(2) reaches exactly the object behind an open descriptor. */
    static String fdPath(int fd) {
        return "/proc/self/fd/" + fd;
    }

    /** Binds each call by making it once where it fails harmlessly, as {@link Libc#prepare} does its own. */
    static void prepare() {
        Libc.prepareByFailing(() -> mount(null, "", null, 0, null));
        Libc.prepareByFailing(() -> umount2("", UMOUNT_NOFOLLOW));
        Libc.prepareByFailing(() -> openTreeClone(-1));
        Libc.prepareByFailing(() -> mountSetattr(-1, 0, 0));
    }

    // Each C function in a class of its own, bound when that class is first used, as in Libc.

    private static final class Mount {
        static final MethodHandle HANDLE =
                Libc.bind("mount", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS), -1);
    }

    /** The new mount API through syscall(2), which older C libraries do not wrap. */
    private static final class MountApi {
        /** syscall(nr, int, const char *, unsigned): open_tree. */
        static final MethodHandle THREE =
                Libc.bind("syscall", FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG), 1);
        /** syscall(nr, int, const char *, long, void *, long): mount_setattr and move_mount. */
        static final MethodHandle FIVE = Libc.bind(
                "syscall",
                FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG),
                1);
        /** struct mount_attr (linux/mount.h). */
        static final StructLayout MOUNT_ATTR = MemoryLayout.structLayout(
                        JAVA_LONG.withName("attr_set"),
                        JAVA_LONG.withName("attr_clr"),
                        JAVA_LONG.withName("propagation"),
                        JAVA_LONG.withName("userns_fd"))
                .withName("mount_attr");

        static final VarHandle ATTR_SET = Libc.field(MOUNT_ATTR, "attr_set");
        static final VarHandle ATTR_CLR = Libc.field(MOUNT_ATTR, "attr_clr");
    }

    private static final class Umount2 {
        static final MethodHandle HANDLE = Libc.bind("umount2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), -1);
    }
}
