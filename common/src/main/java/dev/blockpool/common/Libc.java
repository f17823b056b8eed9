package dev.blockpool.common;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * The Linux system calls the driver makes itself, through Java's foreign function API (no JNI
 * library to ship): opening a path (also without following any symlink), mount(2), umount2(2),
 * statx(2), fstatfs(2), mknod(2), ioctl(2), getdents64(2). The one place that knows the C
 * library's calls and constants; each failure is an {@link ErrnoException} carrying errno and the
 * system's words. A call that can hang on a dead filesystem is made through {@link BlockingCalls}.
 *
 * <p>Binding a symbol and viewing native memory are restricted methods: this class is the one place that uses them,
 * so it is the one place that silences javac's warning about them.
 */
@SuppressWarnings("restricted")
public final class Libc {

    public static final int O_RDONLY = 0;
    public static final int O_WRONLY = 1;
    public static final int O_RDWR = 2;
    public static final int O_CREAT = 0x40;
    public static final int O_TRUNC = 0x200;
    public static final int O_PATH = 0x200000;
    public static final int O_NOFOLLOW = 0x20000;
    public static final int O_DIRECTORY = 0x10000;
    public static final int O_CLOEXEC = 0x80000;
    public static final int ENOENT = 2;
    public static final int ENXIO = 6;
    public static final int EWOULDBLOCK = 11;
    public static final int EBUSY = 16;
    public static final int EEXIST = 17;
    public static final int EXDEV = 18;
    public static final int ENOTDIR = 20;
    public static final int EINVAL = 22;
    public static final int ENOTTY = 25;
    public static final int ENOSPC = 28;
    public static final int ENOSYS = 38;
    public static final int ELOOP = 40;
    public static final int EOPNOTSUPP = 95;
    public static final int EDQUOT = 122;

    /** ioctl(dest_fd, FICLONE, src_fd): dest shares all of src's extents (a reflink). */
    public static final long FICLONE = 0x40049409L;

    public static final long MS_RDONLY = 1;
    public static final long MS_NOSUID = 2;
    public static final long MS_NODEV = 4;
    public static final long MS_NOEXEC = 8;
    public static final long MS_SYNCHRONOUS = 16;
    public static final long MS_REMOUNT = 32;
    public static final long MS_DIRSYNC = 128;
    public static final long MS_NOATIME = 1024;
    public static final long MS_NODIRATIME = 2048;
    public static final long MS_BIND = 4096;
    public static final long MS_RELATIME = 1L << 21;
    public static final long MS_STRICTATIME = 1L << 24;
    public static final long MS_LAZYTIME = 1L << 25;
    public static final int LOCK_EX = 2;
    public static final int LOCK_NB = 4;
    public static final int MNT_DETACH = 2;
    public static final int UMOUNT_NOFOLLOW = 8;

    public static final int S_IFMT = 0xF000;
    public static final int S_IFCHR = 0x2000;
    public static final int S_IFDIR = 0x4000;
    public static final int S_IFBLK = 0x6000;
    public static final int S_IFREG = 0x8000;
    public static final int S_IFLNK = 0xA000;

    private static final int AT_FDCWD = -100;
    private static final int AT_EMPTY_PATH = 0x1000;
    private static final int AT_SYMLINK_NOFOLLOW = 0x100;
    private static final int AT_STATX_DONT_SYNC = 0x4000;
    private static final int STATX_TYPE = 0x1;
    private static final int STATX_SIZE = 0x200;
    private static final long STATX_ATTR_MOUNT_ROOT = 0x2000;
    private static final long RESOLVE_NO_SYMLINKS = 0x04;
    private static final long RESOLVE_CACHED = 0x20;
    /** Room for some 16,000 directory entries of the pool's names per getdents64 call. */
    private static final long DIRENT_BUFFER_BYTES = 1 << 20;

    private static final long DIRENT_PAGE_BUFFER_BYTES = 64 << 10;
    private static final int SEEK_SET = 0;
    /** openat2's number is the same on every architecture (the unified syscall table). */
    private static final long SYS_OPENAT2 = 437;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));

    private static final MethodHandle SYSCALL =
            function("syscall", FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG), 1);
    private static final MethodHandle OPENAT =
            function("openat", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT), 3);
    private static final MethodHandle IOCTL_POINTER =
            function("ioctl", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS), 2);
    private static final MethodHandle IOCTL_VALUE =
            function("ioctl", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG), 2);
    private static final MethodHandle CLOSE = function("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT), -1);
    private static final MethodHandle FLOCK =
            function("flock", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT), -1);
    private static final MethodHandle LSEEK =
            function("lseek", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT), -1);
    private static final MethodHandle GETDENTS64 =
            function("getdents64", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG), -1);
    private static final MethodHandle MOUNT =
            function("mount", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS), -1);
    private static final MethodHandle UMOUNT2 =
            function("umount2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), -1);
    private static final MethodHandle STATX =
            function("statx", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS), -1);
    private static final MethodHandle FSTATFS =
            function("fstatfs", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS), -1);
    private static final MethodHandle MKNOD =
            function("mknod", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_LONG), -1);
    private static final MethodHandle STRERROR = LINKER.downcallHandle(
            LINKER.defaultLookup().find("strerror").orElseThrow(), FunctionDescriptor.of(ADDRESS, JAVA_INT));

    /** A failed system call: errno and the system's description of it. */
    public static final class ErrnoException extends RuntimeException {
        private final int errno;

        ErrnoException(int errno) {
            super(strerror(errno));
            this.errno = errno;
        }

        public int errno() {
            return errno;
        }
    }

    /**
     * What statx(2) tells of a file: its type and size, the device a device node stands for, the
     * device of the filesystem it is on, and whether it is the root of a mount (STATX_ATTR_MOUNT_ROOT;
     * empty where the kernel does not say, before Linux 5.8).
     */
    public record Stat(
            int mode,
            long size,
            int rdevMajor,
            int rdevMinor,
            int devMajor,
            int devMinor,
            Optional<Boolean> mountRoot) {
        public boolean isDirectory() {
            return (mode & S_IFMT) == S_IFDIR;
        }

        public boolean isRegularFile() {
            return (mode & S_IFMT) == S_IFREG;
        }

        public boolean isBlockDevice() {
            return (mode & S_IFMT) == S_IFBLK;
        }
    }

    /**
     * A filesystem's size from statfs(2), in units of {@code fragmentSize} (f_frsize, what df(1)
     * and {@code stat -f %S} count in): blocks, free ones, those free to unprivileged users, inodes,
     * and the mount flags (f_flags).
     */
    public record StatFs(
            long fragmentSize,
            long blocks,
            long freeBlocks,
            long availableBlocks,
            long inodes,
            long freeInodes,
            long flags) {

        /** ST_RDONLY: mounted read-only, as the kernel sees it now (after an errors=remount-ro too). */
        public boolean readOnly() {
            return (flags & ST_RDONLY) != 0;
        }

        /** Bytes unprivileged writers may still take. */
        public long availableBytes() {
            return availableBlocks * fragmentSize;
        }
    }

    static final long ST_RDONLY = 1;

    private Libc() {}

    /**
     * Opens {@code path} as an O_PATH descriptor without following a symlink anywhere in it
     * (openat2's RESOLVE_NO_SYMLINKS; on kernels before 5.6, O_NOFOLLOW for the last name), so
     * what is opened is exactly the object at that path, never a symlink's destination.
     */
    public static int openPathNoSymlinks(String path, boolean directory) {
        int flags = O_PATH | O_CLOEXEC | O_NOFOLLOW | (directory ? O_DIRECTORY : 0);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            long fd = openat2(arena, state, path, flags, RESOLVE_NO_SYMLINKS);
            if (fd >= 0) {
                return (int) fd;
            }
            if (errno(state) != ENOSYS) {
                throw new ErrnoException(errno(state));
            }
            int fallback = (int) OPENAT.invokeExact(state, AT_FDCWD, arena.allocateFrom(path), flags, 0);
            return check(fallback, state);
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("openat2 could not be called", t);
        }
    }

    /**
     * {@link #openPathNoSymlinks} from the kernel's caches alone (openat2's RESOLVE_CACHED): empty,
     * without waiting, where any name on the way would have to be looked up or revalidated (an
     * NFS or FUSE filesystem that may not answer), and where the kernel cannot say (before 5.12);
     * an {@link ErrnoException} where the caches tell (ENOENT: the kernel knows the name is not
     * there). A path something is mounted on is always cached, with every directory above it.
     */
    public static OptionalInt openPathCached(String path) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            long fd =
                    openat2(arena, state, path, O_PATH | O_CLOEXEC | O_NOFOLLOW, RESOLVE_NO_SYMLINKS | RESOLVE_CACHED);
            if (fd >= 0) {
                return OptionalInt.of((int) fd);
            }
            int errno = errno(state);
            if (errno == EWOULDBLOCK || errno == EINVAL || errno == ENOSYS) {
                return OptionalInt.empty();
            }
            throw new ErrnoException(errno);
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("openat2 could not be called", t);
        }
    }

    /** openat2(2) through syscall(2), which the C library may not wrap: a descriptor, or -1 and errno in {@code state}. */
    private static long openat2(Arena arena, MemorySegment state, String path, long flags, long resolve)
            throws Throwable {
        MemorySegment how = arena.allocate(JAVA_LONG, 3); // struct open_how: flags, mode, resolve
        how.setAtIndex(JAVA_LONG, 0, flags);
        how.setAtIndex(JAVA_LONG, 2, resolve);
        return (long)
                SYSCALL.invokeExact(state, SYS_OPENAT2, (long) AT_FDCWD, arena.allocateFrom(path), how, how.byteSize());
    }

    /** open(2) of {@code path} with {@code flags} (O_CLOEXEC added) and {@code mode} for a created file. */
    public static int open(String path, int flags, int mode) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            return check(
                    (int) OPENAT.invokeExact(state, AT_FDCWD, arena.allocateFrom(path), flags | O_CLOEXEC, mode),
                    state);
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("openat could not be called", t);
        }
    }

    /** ioctl(2) whose argument is a pointer to {@code argument} (a struct the caller lays out). */
    public static int ioctl(int fd, long request, MemorySegment argument) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            return check((int) IOCTL_POINTER.invokeExact(state, fd, request, argument), state);
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("ioctl could not be called", t);
        }
    }

    /** ioctl(2) whose argument is a plain integer (a descriptor, a flag, or unused). */
    public static int ioctl(int fd, long request, long argument) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            return check((int) IOCTL_VALUE.invokeExact(state, fd, request, argument), state);
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("ioctl could not be called", t);
        }
    }

    public static void close(int fd) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            int ignored = (int) CLOSE.invokeExact(state, fd);
        } catch (Throwable t) {
            throw new IllegalStateException("close could not be called", t);
        }
    }

    /**
     * flock(2): a lock on the open file description, so two descriptors opened separately exclude
     * each other even in one process, and NFS and GlusterFS clients on other hosts see it too.
     */
    public static void flock(int fd, int operation) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            check((int) FLOCK.invokeExact(state, fd, operation), state);
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("flock could not be called", t);
        }
    }

    /** A name read from a directory, and the position at which reading resumes after it (its d_off). */
    public record DirectoryEntry(String name, long resumeAt) {}

    /**
     * What {@link #directoryEntries} read: the names wanted, in the directory's own order, and
     * whether the directory ended before {@code count} of them were found.
     */
    public record DirectoryRead(List<DirectoryEntry> entries, boolean end) {}

    /**
     * At most {@code count} names ending with {@code suffix}, in the directory's own order,
     * starting at position {@code from} (0 for the start; else a {@link DirectoryEntry#resumeAt}
     * read before), read with getdents64(2) into one large buffer: a Java string is made only for
     * the names wanted, which in a directory of thousands of files is most of what listing it
     * costs in Java. Positions are the cookies telldir(3) and NFS use: ext4 and XFS keep them valid
     * while other names are added and removed, so a listing can resume where it stopped without
     * reading the names before it again.
     */
    public static DirectoryRead directoryEntries(String path, String suffix, long from, int count) {
        byte[] wanted = suffix.getBytes(StandardCharsets.UTF_8);
        List<DirectoryEntry> entries = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            int fd = check(
                    (int) OPENAT.invokeExact(
                            state, AT_FDCWD, arena.allocateFrom(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0),
                    state);
            try {
                if (from != 0 && (long) LSEEK.invokeExact(state, fd, from, SEEK_SET) < 0) {
                    throw new ErrnoException(errno(state));
                }
                // A page needs a few hundred names; a whole listing reads in large steps.
                long size = count == Integer.MAX_VALUE ? DIRENT_BUFFER_BYTES : DIRENT_PAGE_BUFFER_BYTES;
                MemorySegment buffer = arena.allocate(size, 8);
                long filled;
                while ((filled = (long) GETDENTS64.invokeExact(state, fd, buffer, buffer.byteSize())) > 0) {
                    // struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name (NUL-terminated)
                    long recordLength;
                    for (long entry = 0; entry < filled; entry += recordLength) {
                        recordLength = Short.toUnsignedInt(buffer.get(JAVA_SHORT, entry + 16));
                        long name = entry + 19;
                        int length = 0;
                        while (buffer.get(JAVA_BYTE, name + length) != 0) {
                            length++;
                        }
                        if (endsWith(buffer, name, length, wanted)) {
                            entries.add(new DirectoryEntry(
                                    buffer.getString(name, StandardCharsets.UTF_8), buffer.get(JAVA_LONG, entry + 8)));
                            if (entries.size() == count) {
                                return new DirectoryRead(entries, false);
                            }
                        }
                    }
                }
                if (filled < 0) {
                    throw new ErrnoException(errno(state));
                }
            } finally {
                int ignored = (int) CLOSE.invokeExact(state, fd);
            }
            return new DirectoryRead(entries, true);
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("getdents64 could not be called", t);
        }
    }

    private static boolean endsWith(MemorySegment buffer, long name, int length, byte[] suffix) {
        if (length < suffix.length) {
            return false;
        }
        for (int i = 0; i < suffix.length; i++) {
            if (buffer.get(JAVA_BYTE, name + length - suffix.length + i) != suffix[i]) {
                return false;
            }
        }
        return true;
    }

    public static Stat stat(int fd) {
        return statx(fd, "", AT_EMPTY_PATH);
    }

    /**
     * {@link #stat} with what the kernel has in memory (AT_STATX_DONT_SYNC): a network or FUSE
     * filesystem is not asked, so it answers also when its server does not.
     */
    public static Stat statCached(int fd) {
        return statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC);
    }

    /** statx(2) of the path itself, a symlink in its last name not followed (as lstat(2)). */
    public static Stat lstat(String path) {
        return statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW);
    }

    private static Stat statx(int directory, String path, int flags) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            MemorySegment buffer = arena.allocate(256, 8); // struct statx
            check(
                    (int) STATX.invokeExact(
                            state, directory, arena.allocateFrom(path), flags, STATX_TYPE | STATX_SIZE, buffer),
                    state);
            boolean told = (buffer.get(JAVA_LONG, 56) & STATX_ATTR_MOUNT_ROOT) != 0; // stx_attributes_mask
            return new Stat(
                    Short.toUnsignedInt(buffer.get(JAVA_SHORT, 28)),
                    buffer.get(JAVA_LONG, 40),
                    buffer.get(JAVA_INT, 128),
                    buffer.get(JAVA_INT, 132),
                    buffer.get(JAVA_INT, 136),
                    buffer.get(JAVA_INT, 140),
                    told ? Optional.of((buffer.get(JAVA_LONG, 8) & STATX_ATTR_MOUNT_ROOT) != 0) : Optional.empty());
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("statx could not be called", t);
        }
    }

    /** fstatfs(2) of an open descriptor (an O_PATH one will do). */
    public static StatFs fstatfs(int fd) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            // struct statfs of the 64-bit ABIs: f_type, f_bsize, f_blocks, f_bfree, f_bavail, f_files,
            // f_ffree, f_fsid, f_namelen, f_frsize, f_flags, f_spare[4]: 8 bytes each but f_fsid's two ints.
            MemorySegment buffer = arena.allocate(128, 8);
            check((int) FSTATFS.invokeExact(state, fd, buffer), state);
            long fragment = buffer.get(JAVA_LONG, 72);
            return new StatFs(
                    fragment != 0 ? fragment : buffer.get(JAVA_LONG, 8),
                    buffer.get(JAVA_LONG, 16),
                    buffer.get(JAVA_LONG, 24),
                    buffer.get(JAVA_LONG, 32),
                    buffer.get(JAVA_LONG, 40),
                    buffer.get(JAVA_LONG, 48),
                    buffer.get(JAVA_LONG, 80));
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("fstatfs could not be called", t);
        }
    }

    /** mknod(2) of a block device node {@code major:minor} at {@code path}, with permission bits {@code mode}. */
    public static void mknodBlock(String path, int mode, int major, int minor) {
        // glibc's makedev(): the 64-bit dev_t keeps the old 8+8 bits low and the rest above.
        long dev = ((major & 0xfffff000L) << 32)
                | ((major & 0xfffL) << 8)
                | ((minor & 0xffffff00L) << 12)
                | (minor & 0xffL);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            check((int) MKNOD.invokeExact(state, arena.allocateFrom(path), S_IFBLK | mode, dev), state);
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("mknod could not be called", t);
        }
    }

    /** mount(2); a null source, type or data is passed as NULL. */
    public static void mount(String source, String target, String type, long flags, String data) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            check(
                    (int) MOUNT.invokeExact(
                            state,
                            string(arena, source),
                            arena.allocateFrom(target),
                            string(arena, type),
                            flags,
                            string(arena, data)),
                    state);
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("mount could not be called", t);
        }
    }

    public static void umount2(String target, int flags) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            check((int) UMOUNT2.invokeExact(state, arena.allocateFrom(target), flags), state);
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("umount2 could not be called", t);
        }
    }

    /**
     * Makes every call once, each failing harmlessly (an empty path, a request no descriptor
     * knows): the first call of each downcall links it, about 100 ms in all, which would
     * otherwise fall on the first requests a node serves.
     */
    public static void prepare() {
        int fd = openPathNoSymlinks("/", true);
        try {
            stat(fd);
            fstatfs(fd);
        } finally {
            close(fd);
        }
        int root = open("/", O_RDONLY | O_DIRECTORY, 0);
        try (Arena arena = Arena.ofConfined()) {
            ignore(() -> ioctl(root, 0, 0L));
            ignore(() -> ioctl(root, 0, arena.allocate(8)));
        } finally {
            close(root);
        }
        ignore(() -> mount(null, "", null, 0, null));
        ignore(() -> umount2("", UMOUNT_NOFOLLOW));
        ignore(() -> mknodBlock("", 0, 0, 0));
        strerror(ENOENT);
    }

    private static void ignore(Runnable call) {
        try {
            call.run();
        } catch (ErrnoException e) {
            // the failure was the point: only the call's linking was wanted
        }
    }

    /** The path through which the kernel reaches exactly the object behind an open descriptor. */
    public static String fdPath(int fd) {
        return "/proc/self/fd/" + fd;
    }

    public static String strerror(int errno) {
        try {
            MemorySegment text = (MemorySegment) STRERROR.invokeExact(errno);
            return text.reinterpret(1024).getString(0);
        } catch (Throwable t) {
            return "errno " + errno;
        }
    }

    private static MemorySegment string(Arena arena, String value) {
        return value == null ? MemorySegment.NULL : arena.allocateFrom(value);
    }

    private static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }

    private static int check(int result, MemorySegment state) {
        if (result < 0) {
            throw new ErrnoException(errno(state));
        }
        return result;
    }

    /** A downcall that captures errno; {@code firstVariadic} is the index of the first variadic argument, or -1. */
    private static MethodHandle function(String name, FunctionDescriptor descriptor, int firstVariadic) {
        MemorySegment address = LINKER.defaultLookup()
                .find(name)
                .orElseThrow(() -> new IllegalStateException("the C library has no " + name));
        Linker.Option errno = Linker.Option.captureCallState("errno");
        return firstVariadic < 0
                ? LINKER.downcallHandle(address, descriptor, errno)
                : LINKER.downcallHandle(address, descriptor, errno, Linker.Option.firstVariadicArg(firstVariadic));
    }
}
