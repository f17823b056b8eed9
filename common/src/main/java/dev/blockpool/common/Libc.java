package dev.blockpool.common;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * The Linux system calls the driver makes itself, through Java's foreign function API (no JNI
 * library to ship): opening a path (also without following any symlink), statx(2), fstatfs(2),
 * ioctl(2) and lseek(2). Each failure is an
 * {@link ErrnoException} that carries errno and says which call failed and the system's words
 * ("umount2: Device or resource busy"). A call that can hang on a dead filesystem is made through
 * {@link BlockingCalls}.
 *
 * <p>Where the knowledge of a system call lives. A call lives beside its only caller: this class
 * binds the C functions several packages call, and gives the others their binding ({@link #bind})
 * and their one helper for calling ({@link #call}), which captures errno: the host's mounts room
 * binds mount(2), umount2(2) and the new mount API, its loops room mknod(2); the pool's records
 * bind flock(2) and getdents64(2), its extents pread(2). Each function is bound on its first call
 * (binding generates code at run time, so a process binds only the calls it makes:
 * docs/performance-node.md). It owns the constants of its calls and the structs they read or fill
 * ({@code statx}, {@code statfs}, {@code open_how}). An ioctl belongs to
 * the subsystem whose driver defines it: its request ({@link Ioctl}) and the structs it passes,
 * as named {@link MemoryLayout}s whose fields are read and written through {@link #field}, are
 * declared in the class that speaks to that subsystem (the loop driver's in host's
 * {@code LinuxLoopCalls}, FICLONE in pool's {@code ImageFiles}, FIEMAP in pool's {@code ImageExtents}) and
 * made through {@link #ioctl}.
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
    public static final int EPERM = 1;
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

    public static final int S_IFMT = 0xF000;
    public static final int S_IFCHR = 0x2000;
    public static final int S_IFDIR = 0x4000;
    public static final int S_IFBLK = 0x6000;
    public static final int S_IFREG = 0x8000;
    public static final int S_IFLNK = 0xA000;
    public static final int S_IFSOCK = 0xC000;

    private static final int AT_FDCWD = -100;
    public static final int AT_EMPTY_PATH = 0x1000;
    private static final int AT_SYMLINK_NOFOLLOW = 0x100;
    private static final int AT_STATX_DONT_SYNC = 0x4000;
    private static final int STATX_TYPE = 0x1;
    private static final int STATX_SIZE = 0x200;
    private static final int STATX_BLOCKS = 0x400;
    private static final long STATX_ATTR_MOUNT_ROOT = 0x2000;
    private static final long RESOLVE_NO_SYMLINKS = 0x04;
    private static final long RESOLVE_CACHED = 0x20;
    /** openat2's number is the same on every architecture (the unified syscall table). */
    private static final long SYS_OPENAT2 = 437;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(PathElement.groupElement("errno"));

    /** An ioctl(2) request: its number and its name in the kernel's header, which a failure is said with. */
    public record Ioctl(String name, long number) {}

    /** A failed system call: errno, and a message naming the call with the system's description of errno. */
    public static final class ErrnoException extends RuntimeException {
        private final int errno;

        ErrnoException(String call, int errno) {
            super(call + ": " + strerror(errno));
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

        /** The filesystem's size, as statvfs(2) counts it. */
        public long totalBytes() {
            return blocks * fragmentSize;
        }
    }

    static final long ST_RDONLY = 1;

    private Libc() {}

    /**
     * The field at {@code path} (its name in the C header; a nested field's names from the
     * outermost) of the struct laid out by {@code layout}, read and written on a segment that
     * starts with that struct.
     */
    public static VarHandle field(MemoryLayout layout, String... path) {
        return MethodHandles.insertCoordinates(layout.varHandle(elements(path)), 1, 0L);
    }

    /** The bytes of the field at {@code path} (a char array, a nested struct) in {@code struct}, laid out by {@code layout}. */
    public static MemorySegment slice(MemorySegment struct, MemoryLayout layout, String... path) {
        PathElement[] elements = elements(path);
        return struct.asSlice(
                layout.byteOffset(elements), layout.select(elements).byteSize());
    }

    private static PathElement[] elements(String... path) {
        return Arrays.stream(path).map(PathElement::groupElement).toArray(PathElement[]::new);
    }

    /**
     * Opens {@code path} as an O_PATH descriptor without following a symlink anywhere in it
     * (openat2's RESOLVE_NO_SYMLINKS; on kernels before 5.6, O_NOFOLLOW for the last name), so
     * what is opened is exactly the object at that path, never a symlink's destination.
     */
    public static int openPathNoSymlinks(String path, boolean directory) {
        int flags = O_PATH | O_CLOEXEC | O_NOFOLLOW | (directory ? O_DIRECTORY : 0);
        long fd = call("openat2", call -> {
            long opened = openat2(call, path, flags, RESOLVE_NO_SYMLINKS);
            if (opened < 0 && call.errno() != ENOSYS) {
                throw call.failure();
            }
            return opened;
        });
        return fd >= 0 ? (int) fd : open(path, flags, 0);
    }

    /**
     * {@link #openPathNoSymlinks} from the kernel's caches alone (openat2's RESOLVE_CACHED): empty,
     * without waiting, where any name on the way would have to be looked up or revalidated (an
     * NFS or FUSE filesystem that may not answer), and where the kernel cannot say (before 5.12);
     * an {@link ErrnoException} where the caches tell (ENOENT: the kernel knows the name is not
     * there). A path something is mounted on is always cached, with every directory above it.
     */
    public static OptionalInt openPathCached(String path) {
        return call("openat2", call -> {
            long fd = openat2(call, path, O_PATH | O_CLOEXEC | O_NOFOLLOW, RESOLVE_NO_SYMLINKS | RESOLVE_CACHED);
            if (fd >= 0) {
                return OptionalInt.of((int) fd);
            }
            int errno = call.errno();
            if (errno == EWOULDBLOCK || errno == EINVAL || errno == ENOSYS) {
                return OptionalInt.empty();
            }
            throw call.failure();
        });
    }

    /** openat2(2) through syscall(2), which the C library may not wrap: a descriptor, or -1 and errno in the call. */
    private static long openat2(Downcall call, String path, long flags, long resolve) throws Throwable {
        MemorySegment how = call.arena().allocate(Openat2.OPEN_HOW);
        Openat2.FLAGS.set(how, flags);
        Openat2.RESOLVE.set(how, resolve);
        return (long) Openat2.SYSCALL.invokeExact(
                call.state(), SYS_OPENAT2, (long) AT_FDCWD, call.string(path), how, how.byteSize());
    }

    /** open(2) of {@code path} with {@code flags} (O_CLOEXEC added) and {@code mode} for a created file. */
    public static int open(String path, int flags, int mode) {
        return call(
                "openat",
                call -> call.check((int)
                        Openat.HANDLE.invokeExact(call.state(), AT_FDCWD, call.string(path), flags | O_CLOEXEC, mode)));
    }

    /** ioctl(2) whose argument is a pointer to {@code argument} (a struct the caller lays out). */
    public static int ioctl(int fd, Ioctl request, MemorySegment argument) {
        return call(
                request.name(),
                call -> call.check(
                        (int) IoctlWithPointer.HANDLE.invokeExact(call.state(), fd, request.number(), argument)));
    }

    /** ioctl(2) whose argument is a plain integer (a descriptor, a flag, or unused). */
    public static int ioctl(int fd, Ioctl request, long argument) {
        return call(
                request.name(),
                call -> call.check(
                        (int) IoctlWithValue.HANDLE.invokeExact(call.state(), fd, request.number(), argument)));
    }

    /**
     * lseek(2) of {@code fd} to {@code offset} by {@code whence}: the new offset. With SEEK_DATA
     * past the last data (or SEEK_HOLE past the end), ENXIO.
     */
    public static long lseek(int fd, long offset, int whence) {
        return call("lseek", call -> call.check((long) Lseek.HANDLE.invokeExact(call.state(), fd, offset, whence)));
    }

    /** close(2); a failure is not reported: the descriptor is gone either way. */
    public static void close(int fd) {
        call("close", call -> (int) Close.HANDLE.invokeExact(call.state(), fd));
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
        return call("statx", call -> {
            MemorySegment statx = call.arena().allocate(Statx.STATX);
            call.check((int) Statx.HANDLE.invokeExact(
                    call.state(), directory, call.string(path), flags, STATX_TYPE | STATX_SIZE, statx));
            boolean told = ((long) Statx.ATTRIBUTES_MASK.get(statx) & STATX_ATTR_MOUNT_ROOT) != 0;
            return new Stat(
                    Short.toUnsignedInt((short) Statx.MODE.get(statx)),
                    (long) Statx.SIZE.get(statx),
                    (int) Statx.RDEV_MAJOR.get(statx),
                    (int) Statx.RDEV_MINOR.get(statx),
                    (int) Statx.DEV_MAJOR.get(statx),
                    (int) Statx.DEV_MINOR.get(statx),
                    told
                            ? Optional.of(((long) Statx.ATTRIBUTES.get(statx) & STATX_ATTR_MOUNT_ROOT) != 0)
                            : Optional.empty());
        });
    }

    /** A file's size and the bytes its blocks take (stx_blocks counts 512-byte units): what a sparse file holds. */
    public record FileSpace(long size, long allocated) {}

    /** statx(2) of the path itself, a symlink in its last name not followed: its size and allocated bytes. */
    public static FileSpace space(String path) {
        return call("statx", call -> {
            MemorySegment statx = call.arena().allocate(Statx.STATX);
            call.check((int) Statx.HANDLE.invokeExact(
                    call.state(), AT_FDCWD, call.string(path), AT_SYMLINK_NOFOLLOW, STATX_SIZE | STATX_BLOCKS, statx));
            return new FileSpace((long) Statx.SIZE.get(statx), 512 * (long) Statx.BLOCKS.get(statx));
        });
    }

    /** fstatfs(2) of an open descriptor (an O_PATH one will do). */
    public static StatFs fstatfs(int fd) {
        return call("fstatfs", call -> {
            MemorySegment statfs = call.arena().allocate(Fstatfs.STATFS);
            call.check((int) Fstatfs.HANDLE.invokeExact(call.state(), fd, statfs));
            long fragment = (long) Fstatfs.FRSIZE.get(statfs);
            return new StatFs(
                    fragment != 0 ? fragment : (long) Fstatfs.BSIZE.get(statfs),
                    (long) Fstatfs.BLOCKS.get(statfs),
                    (long) Fstatfs.BFREE.get(statfs),
                    (long) Fstatfs.BAVAIL.get(statfs),
                    (long) Fstatfs.FILES.get(statfs),
                    (long) Fstatfs.FFREE.get(statfs),
                    (long) Fstatfs.FLAGS.get(statfs));
        });
    }

    /**
     * Makes every call of this class once, each failing harmlessly (an empty path, a request no
     * descriptor knows): the first call of each C function binds and links it, which would
     * otherwise fall on the first requests a node serves (docs/performance-node.md, "The first calls
     * after a start"). A call bound beside its caller is prepared there, through
     * {@link #prepareByFailing}.
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
            Ioctl none = new Ioctl("ioctl", 0);
            prepareByFailing(() -> ioctl(root, none, 0L));
            prepareByFailing(() -> ioctl(root, none, arena.allocate(8)));
        } finally {
            close(root);
        }
        strerror(ENOENT);
    }

    /**
     * Makes a call that fails harmlessly, for its binding alone: the warm-up of {@link #prepare},
     * and of the calls bound beside their one caller.
     */
    public static void prepareByFailing(Runnable call) {
        try {
            call.run();
        } catch (ErrnoException e) {
            // the failure was the point: only the call's linking was wanted
        }
    }

    public static String strerror(int errno) {
        try {
            MemorySegment text = (MemorySegment) Strerror.HANDLE.invokeExact(errno);
            return text.reinterpret(1024).getString(0);
        } catch (Throwable t) {
            return "errno " + errno;
        }
    }

    /** A call being made: its name for a failure, the arena of its arguments, and where errno is captured. */
    public record Downcall(String name, Arena arena, MemorySegment state) {

        public int errno() {
            return (int) ERRNO.get(state, 0L);
        }

        public ErrnoException failure() {
            return new ErrnoException(name, errno());
        }

        public int check(int result) {
            if (result < 0) {
                throw failure();
            }
            return result;
        }

        public long check(long result) {
            if (result < 0) {
                throw failure();
            }
            return result;
        }

        /** A C string in the call's arena; NULL for null. */
        public MemorySegment string(String value) {
            return value == null ? MemorySegment.NULL : arena.allocateFrom(value);
        }
    }

    /** What a call does with its {@link Downcall}: invoke the function, check and read its result. */
    @FunctionalInterface
    public interface Body<T> {
        T make(Downcall call) throws Throwable;
    }

    /**
     * Makes the call {@code name} in an arena of its own, errno captured: every system call the
     * driver makes goes through here, those bound beside their only caller too. An
     * {@link ErrnoException} is the call's failure; anything else thrown means the function could
     * not be called at all.
     */
    public static <T> T call(String name, Body<T> body) {
        try (Arena arena = Arena.ofConfined()) {
            return body.make(new Downcall(name, arena, arena.allocate(CALL_STATE)));
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(name + " could not be called", t);
        }
    }

    /** The C library's {@code name}, capturing errno; {@code firstVariadic} is the index of the first variadic argument, or -1. */
    public static MethodHandle bind(String name, FunctionDescriptor descriptor, int firstVariadic) {
        MemorySegment address = LINKER.defaultLookup()
                .find(name)
                .orElseThrow(() -> new IllegalStateException("the C library has no " + name));
        Linker.Option errno = Linker.Option.captureCallState("errno");
        return firstVariadic < 0
                ? LINKER.downcallHandle(address, descriptor, errno)
                : LINKER.downcallHandle(address, descriptor, errno, Linker.Option.firstVariadicArg(firstVariadic));
    }

    // Each C function in a class of its own, bound when that class is first used: see the class's doc.

    private static final class Openat2 {
        static final MethodHandle SYSCALL =
                bind("syscall", FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG), 1);
        /** struct open_how (linux/openat2.h). */
        static final StructLayout OPEN_HOW = MemoryLayout.structLayout(
                        JAVA_LONG.withName("flags"), JAVA_LONG.withName("mode"), JAVA_LONG.withName("resolve"))
                .withName("open_how");

        static final VarHandle FLAGS = field(OPEN_HOW, "flags");
        static final VarHandle RESOLVE = field(OPEN_HOW, "resolve");
    }

    private static final class Openat {
        static final MethodHandle HANDLE =
                bind("openat", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT), 3);
    }

    private static final class IoctlWithPointer {
        static final MethodHandle HANDLE =
                bind("ioctl", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS), 2);
    }

    private static final class IoctlWithValue {
        static final MethodHandle HANDLE =
                bind("ioctl", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG), 2);
    }

    private static final class Close {
        static final MethodHandle HANDLE = bind("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT), -1);
    }

    private static final class Lseek {
        static final MethodHandle HANDLE =
                bind("lseek", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT), -1);
    }

    private static final class Statx {
        static final MethodHandle HANDLE =
                bind("statx", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS), -1);
        static final StructLayout TIMESTAMP = MemoryLayout.structLayout(
                JAVA_LONG.withName("tv_sec"), JAVA_INT.withName("tv_nsec"), JAVA_INT.withName("__reserved"));
        /** struct statx (linux/stat.h): the fields read, then the rest of its 256 bytes. */
        static final StructLayout STATX = MemoryLayout.structLayout(
                        JAVA_INT.withName("stx_mask"),
                        JAVA_INT.withName("stx_blksize"),
                        JAVA_LONG.withName("stx_attributes"),
                        JAVA_INT.withName("stx_nlink"),
                        JAVA_INT.withName("stx_uid"),
                        JAVA_INT.withName("stx_gid"),
                        JAVA_SHORT.withName("stx_mode"),
                        MemoryLayout.paddingLayout(2),
                        JAVA_LONG.withName("stx_ino"),
                        JAVA_LONG.withName("stx_size"),
                        JAVA_LONG.withName("stx_blocks"),
                        JAVA_LONG.withName("stx_attributes_mask"),
                        TIMESTAMP.withName("stx_atime"),
                        TIMESTAMP.withName("stx_btime"),
                        TIMESTAMP.withName("stx_ctime"),
                        TIMESTAMP.withName("stx_mtime"),
                        JAVA_INT.withName("stx_rdev_major"),
                        JAVA_INT.withName("stx_rdev_minor"),
                        JAVA_INT.withName("stx_dev_major"),
                        JAVA_INT.withName("stx_dev_minor"),
                        MemoryLayout.paddingLayout(112))
                .withName("statx");

        static final VarHandle ATTRIBUTES = field(STATX, "stx_attributes");
        static final VarHandle MODE = field(STATX, "stx_mode");
        static final VarHandle SIZE = field(STATX, "stx_size");
        static final VarHandle BLOCKS = field(STATX, "stx_blocks");
        static final VarHandle ATTRIBUTES_MASK = field(STATX, "stx_attributes_mask");
        static final VarHandle RDEV_MAJOR = field(STATX, "stx_rdev_major");
        static final VarHandle RDEV_MINOR = field(STATX, "stx_rdev_minor");
        static final VarHandle DEV_MAJOR = field(STATX, "stx_dev_major");
        static final VarHandle DEV_MINOR = field(STATX, "stx_dev_minor");
    }

    private static final class Fstatfs {
        static final MethodHandle HANDLE = bind("fstatfs", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS), -1);
        /** struct statfs of the 64-bit ABIs (bits/statfs.h). */
        static final StructLayout STATFS = MemoryLayout.structLayout(
                        JAVA_LONG.withName("f_type"),
                        JAVA_LONG.withName("f_bsize"),
                        JAVA_LONG.withName("f_blocks"),
                        JAVA_LONG.withName("f_bfree"),
                        JAVA_LONG.withName("f_bavail"),
                        JAVA_LONG.withName("f_files"),
                        JAVA_LONG.withName("f_ffree"),
                        MemoryLayout.sequenceLayout(2, JAVA_INT).withName("f_fsid"),
                        JAVA_LONG.withName("f_namelen"),
                        JAVA_LONG.withName("f_frsize"),
                        JAVA_LONG.withName("f_flags"),
                        MemoryLayout.sequenceLayout(4, JAVA_LONG).withName("f_spare"))
                .withName("statfs");

        static final VarHandle BSIZE = field(STATFS, "f_bsize");
        static final VarHandle BLOCKS = field(STATFS, "f_blocks");
        static final VarHandle BFREE = field(STATFS, "f_bfree");
        static final VarHandle BAVAIL = field(STATFS, "f_bavail");
        static final VarHandle FILES = field(STATFS, "f_files");
        static final VarHandle FFREE = field(STATFS, "f_ffree");
        static final VarHandle FRSIZE = field(STATFS, "f_frsize");
        static final VarHandle FLAGS = field(STATFS, "f_flags");
    }

    /** strerror(3) reads no errno of its own: bound without capturing it. */
    private static final class Strerror {
        static final MethodHandle HANDLE = LINKER.downcallHandle(
                LINKER.defaultLookup().find("strerror").orElseThrow(), FunctionDescriptor.of(ADDRESS, JAVA_INT));
    }
}
