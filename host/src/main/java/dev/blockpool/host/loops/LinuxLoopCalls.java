package dev.blockpool.host.loops;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.Descriptors;
import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import dev.blockpool.host.mounts.DeviceNumber;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link LoopCalls} through the loop driver's ioctls (linux/loop.h), as losetup makes them:
 * LOOP_CTL_GET_FREE on /dev/loop-control, then LOOP_CONFIGURE on the free device (Linux 5.8;
 * LOOP_SET_FD and LOOP_SET_STATUS64 before), LOOP_CLR_FD and LOOP_SET_CAPACITY; and
 * LOOP_GET_STATUS64 for {@link LoopStatus}. Each runs through {@link BlockingCalls}: on an image
 * of a dead NFS pool any of them can hang (the status too: the kernel asks the backing file's
 * filesystem for its attributes).
 *
 * <p>The loop driver's requests and the structs they pass are declared here, and only here, as
 * {@link Libc} says of every subsystem's ioctls.
 */
final class LinuxLoopCalls implements LoopCalls {

    private static final Logger log = LoggerFactory.getLogger(LinuxLoopCalls.class);

    private static final Libc.Ioctl LOOP_SET_FD = new Libc.Ioctl("LOOP_SET_FD", 0x4C00);
    private static final Libc.Ioctl LOOP_CLR_FD = new Libc.Ioctl("LOOP_CLR_FD", 0x4C01);
    private static final Libc.Ioctl LOOP_SET_STATUS64 = new Libc.Ioctl("LOOP_SET_STATUS64", 0x4C04);
    private static final Libc.Ioctl LOOP_GET_STATUS64 = new Libc.Ioctl("LOOP_GET_STATUS64", 0x4C05);
    private static final Libc.Ioctl LOOP_SET_CAPACITY = new Libc.Ioctl("LOOP_SET_CAPACITY", 0x4C07);
    private static final Libc.Ioctl LOOP_SET_DIRECT_IO = new Libc.Ioctl("LOOP_SET_DIRECT_IO", 0x4C08);
    private static final Libc.Ioctl LOOP_CONFIGURE = new Libc.Ioctl("LOOP_CONFIGURE", 0x4C0A);
    private static final Libc.Ioctl LOOP_CTL_GET_FREE = new Libc.Ioctl("LOOP_CTL_GET_FREE", 0x4C82);
    private static final int LO_FLAGS_READ_ONLY = 1;
    private static final int LO_FLAGS_DIRECT_IO = 16;
    private static final int LO_NAME_SIZE = 64;
    private static final int LO_KEY_SIZE = 32;

    /**
     * struct loop_info64: a bound device's status, which LOOP_SET_STATUS64 sets and
     * LOOP_GET_STATUS64 reads (the device and inode of the backing file among it).
     */
    static final StructLayout LOOP_INFO64 = MemoryLayout.structLayout(
                    JAVA_LONG.withName("lo_device"),
                    JAVA_LONG.withName("lo_inode"),
                    JAVA_LONG.withName("lo_rdevice"),
                    JAVA_LONG.withName("lo_offset"),
                    JAVA_LONG.withName("lo_sizelimit"),
                    JAVA_INT.withName("lo_number"),
                    JAVA_INT.withName("lo_encrypt_type"),
                    JAVA_INT.withName("lo_encrypt_key_size"),
                    JAVA_INT.withName("lo_flags"),
                    MemoryLayout.sequenceLayout(LO_NAME_SIZE, JAVA_BYTE).withName("lo_file_name"),
                    MemoryLayout.sequenceLayout(LO_NAME_SIZE, JAVA_BYTE).withName("lo_crypt_name"),
                    MemoryLayout.sequenceLayout(LO_KEY_SIZE, JAVA_BYTE).withName("lo_encrypt_key"),
                    MemoryLayout.sequenceLayout(2, JAVA_LONG).withName("lo_init"))
            .withName("loop_info64");

    /** struct loop_config: what LOOP_CONFIGURE binds, the image's descriptor and the device's status at once. */
    static final StructLayout LOOP_CONFIG = MemoryLayout.structLayout(
                    JAVA_INT.withName("fd"),
                    JAVA_INT.withName("block_size"),
                    LOOP_INFO64.withName("info"),
                    MemoryLayout.sequenceLayout(8, JAVA_LONG).withName("__reserved"))
            .withName("loop_config");

    private static final VarHandle CONFIG_FD = Libc.field(LOOP_CONFIG, "fd");
    private static final VarHandle CONFIG_BLOCK_SIZE = Libc.field(LOOP_CONFIG, "block_size");
    private static final VarHandle CONFIG_FLAGS = Libc.field(LOOP_CONFIG, "info", "lo_flags");
    /** The backing file's st_dev (the kernel's new_encode_dev) and inode. */
    private static final VarHandle INFO_DEVICE = Libc.field(LOOP_INFO64, "lo_device");

    private static final VarHandle INFO_INODE = Libc.field(LOOP_INFO64, "lo_inode");

    /**
     * The logical block size of every volume's device, whatever the pool's disk has: a
     * filesystem made on one node must mount on another. Direct I/O takes only where the backing
     * file accepts 512-byte aligned I/O; elsewhere the kernel stays buffered.
     */
    private static final int SECTOR_SIZE = 512;
    /** Another process may take the free device before we bind it (EBUSY): ask again, this often. */
    private static final int ATTEMPTS = 32;

    private static final Duration DEADLINE = Duration.ofSeconds(30);
    /** A status is asked on every node call: it gets the deadline of the node's other looks at a filesystem. */
    private static final Duration STATUS_DEADLINE = Duration.ofSeconds(5);
    /** The only device nodes this class ever makes: /dev/loopN. */
    private static final Pattern LOOP_NAME = Pattern.compile("loop[0-9]+");

    private final BlockingCalls calls;
    private final LoopSysfs sysfs;
    private final Path devDir;

    LinuxLoopCalls(BlockingCalls calls, LoopSysfs sysfs, Path devDir) {
        this.calls = calls;
        this.sysfs = sysfs;
        this.devDir = devDir;
    }

    @Override
    public String attach(Path image, boolean readOnly) {
        return calls.call(DEADLINE, "attaching " + image + " to a loop device", () -> {
            int file = open(image, readOnly ? Libc.O_RDONLY : Libc.O_RDWR, "the image");
            try {
                for (int attempt = 1; ; attempt++) {
                    String name = "loop" + freeDevice();
                    int device = openDevice(name, Libc.O_RDWR);
                    Libc.ErrnoException failure;
                    try {
                        bind(device, file, image, readOnly);
                        return name;
                    } catch (Libc.ErrnoException e) {
                        failure = e;
                    } finally {
                        Libc.close(device);
                    }
                    if (failure.errno() != Libc.EBUSY || attempt == ATTEMPTS) {
                        throw StorageException.internal(
                                "cannot attach %s to %s: %s", image, devDir.resolve(name), failure.getMessage());
                    }
                    log.debug(
                            "{} was taken by another process before {} was bound to it; trying again",
                            devDir.resolve(name),
                            image);
                    pause(attempt);
                }
            } finally {
                Libc.close(file);
            }
        });
    }

    /** {@link LoopStatus} through LOOP_GET_STATUS64 on the device's node in {@code devDir}. */
    static LoopStatus status(BlockingCalls calls, Path devDir) {
        return (name, number) -> calls.call(
                STATUS_DEADLINE, "reading the status of " + devDir.resolve(name), () -> status(devDir, name, number));
    }

    private static Optional<FileId> status(Path devDir, String name, DeviceNumber number) {
        int fd = openDevice(devDir, name, number, Libc.O_RDONLY);
        try {
            return status(fd);
        } catch (Libc.ErrnoException e) {
            throw StorageException.internal("cannot read the status of %s: %s", devDir.resolve(name), e.getMessage());
        } finally {
            Libc.close(fd);
        }
    }

    /** The backing file of the open device {@code fd}; empty when it is not bound. */
    private static Optional<FileId> status(int fd) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment info = arena.allocate(LOOP_INFO64);
            Libc.ioctl(fd, LOOP_GET_STATUS64, info);
            return Optional.of(
                    new FileId(DeviceNumber.fromDevT((long) INFO_DEVICE.get(info)), (long) INFO_INODE.get(info)));
        } catch (Libc.ErrnoException e) {
            if (e.errno() == Libc.ENXIO) {
                return Optional.empty();
            }
            throw e;
        }
    }

    @Override
    public int detach(LoopDevice device) {
        return calls.call(DEADLINE, "detaching " + device.device(), () -> {
            if (sysfs.deviceNumber(device.name()).isEmpty()) {
                return Libc.ENXIO; // the device itself is gone
            }
            int fd = openDevice(device.name(), Libc.O_RDONLY);
            try {
                // Held open, the device cannot be freed and bound anew: what is checked now is what is detached.
                if (!status(fd).equals(Optional.of(device.backingFileId()))) {
                    return Libc.ENXIO;
                }
                Libc.ioctl(fd, LOOP_CLR_FD, 0L);
                return 0;
            } catch (Libc.ErrnoException e) {
                return e.errno();
            } finally {
                Libc.close(fd);
            }
        });
    }

    @Override
    public void setCapacity(LoopDevice device) {
        calls.run(DEADLINE, "refreshing the capacity of " + device.device(), () -> {
            int fd = openDevice(device.name(), Libc.O_RDONLY);
            try {
                Libc.ioctl(fd, LOOP_SET_CAPACITY, 0L);
            } catch (Libc.ErrnoException e) {
                throw StorageException.internal(
                        "cannot refresh the capacity of %s: %s", device.device(), e.getMessage());
            } finally {
                Libc.close(fd);
            }
        });
    }

    /**
     * Another binder usually has the device bound at once and the kernel offers the next one;
     * a device held open exclusively for a while (a probe) is offered again, so the retries
     * slow down, to a few seconds in all, as losetup's do.
     */
    private static void pause(int attempt) {
        try {
            Thread.sleep(Math.min(100, 5L * attempt));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw StorageException.internal("interrupted while looking for a free loop device");
        }
    }

    /** A free device's number; the kernel adds one when none is free. */
    private int freeDevice() {
        int control = open(devDir.resolve("loop-control"), Libc.O_RDWR, "the loop control device");
        try {
            return Libc.ioctl(control, LOOP_CTL_GET_FREE, 0L);
        } catch (Libc.ErrnoException e) {
            throw StorageException.internal("cannot find a free loop device: %s", e.getMessage());
        } finally {
            Libc.close(control);
        }
    }

    /**
     * Binds the image: LOOP_CONFIGURE with direct I/O; without it when refused (EINVAL: a kernel
     * that refuses rather than staying buffered, or one without LOOP_CONFIGURE); the two older
     * ioctls where LOOP_CONFIGURE does not exist. A failure is that of the last ioctl tried.
     */
    private static void bind(int device, int file, Path image, boolean readOnly) {
        int flags = readOnly ? LO_FLAGS_READ_ONLY : 0;
        try {
            try {
                configure(device, file, image, flags | LO_FLAGS_DIRECT_IO);
            } catch (Libc.ErrnoException e) {
                if (e.errno() != Libc.EINVAL) {
                    throw e;
                }
                configure(device, file, image, flags);
            }
        } catch (Libc.ErrnoException e) {
            if (e.errno() != Libc.EINVAL && e.errno() != Libc.ENOTTY) {
                throw e;
            }
            setFd(device, file, image);
        }
    }

    private static void configure(int device, int file, Path image, int flags) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment config = arena.allocate(LOOP_CONFIG);
            CONFIG_FD.set(config, file);
            CONFIG_BLOCK_SIZE.set(config, SECTOR_SIZE);
            CONFIG_FLAGS.set(config, flags);
            fileName(Libc.slice(config, LOOP_CONFIG, "info", "lo_file_name"), image);
            Libc.ioctl(device, LOOP_CONFIGURE, config);
        }
    }

    /** Before Linux 5.8: read-only follows the image's open mode; direct I/O where the kernel takes it. */
    private static void setFd(int device, int file, Path image) {
        Libc.ioctl(device, LOOP_SET_FD, file);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment info = arena.allocate(LOOP_INFO64);
            fileName(Libc.slice(info, LOOP_INFO64, "lo_file_name"), image);
            Libc.ioctl(device, LOOP_SET_STATUS64, info);
        } catch (Libc.ErrnoException e) {
            Libc.ioctl(device, LOOP_CLR_FD, 0L);
            throw e;
        }
        try {
            Libc.ioctl(device, LOOP_SET_DIRECT_IO, 1L);
        } catch (Libc.ErrnoException e) {
            // buffered it is; HostLoopDevices reads which from sysfs
        }
    }

    /** lo_file_name, as losetup fills it: the image's path, cut to fit (sysfs has the whole one). */
    private static void fileName(MemorySegment field, Path image) {
        byte[] name = image.toString().getBytes(StandardCharsets.UTF_8);
        MemorySegment.copy(name, 0, field, JAVA_BYTE, 0, Math.min(name.length, LO_NAME_SIZE - 1));
    }

    /**
     * Opens /dev/loopN, the node of the device the kernel named, without following a symlink,
     * and checks it is that device. A missing node (a /dev that is no devtmpfs, as in some
     * containers) is made, with the number sysfs gives (its minor depends on max_part).
     */
    private int openDevice(String name, int flags) {
        DeviceNumber number = sysfs.deviceNumber(name)
                .orElseThrow(() -> StorageException.internal("the loop device %s has gone from sysfs", name));
        return openDevice(devDir, name, number, flags);
    }

    /** {@link #openDevice(String, int)} of the device with this number. */
    private static int openDevice(Path devDir, String name, DeviceNumber number, int flags) {
        if (!LOOP_NAME.matcher(name).matches()) {
            throw StorageException.internal("%s is not the name of a loop device", name);
        }
        Path node = devDir.resolve(name);
        int fd;
        try {
            fd = Libc.open(node.toString(), flags | Libc.O_NOFOLLOW, 0);
        } catch (Libc.ErrnoException e) {
            if (e.errno() != Libc.ENOENT) {
                throw StorageException.internal("cannot open %s: %s", node, e.getMessage());
            }
            makeNode(node, number);
            fd = open(node, flags, "the new device node");
        }
        Libc.Stat stat = Descriptors.statOrClose(fd, node);
        if (!stat.isBlockDevice() || stat.rdevMajor() != number.major() || stat.rdevMinor() != number.minor()) {
            Libc.close(fd);
            throw StorageException.internal(
                    "%s is not the device node of the loop device %s (%s); it is left as it is", node, name, number);
        }
        return fd;
    }

    private static void makeNode(Path node, DeviceNumber number) {
        if (number.major() != LoopSysfs.LOOP_MAJOR) {
            throw StorageException.internal("sysfs gives %s the number %s, which is no loop device's", node, number);
        }
        try {
            // As devtmpfs makes it: root's, for root and the disk group.
            mknodBlock(node.toString(), 0660, number.major(), number.minor());
            log.info("made the missing device node {} ({})", node, number);
        } catch (Libc.ErrnoException e) {
            if (e.errno() != Libc.EEXIST) { // made meanwhile (udev): opened and checked like any other
                throw StorageException.internal(
                        "cannot make the missing device node %s (%s): %s", node, number, e.getMessage());
            }
        }
    }

    /** mknod(2) of a block device node {@code major:minor} at {@code path}, with permission bits {@code mode}. */
    private static void mknodBlock(String path, int mode, int major, int minor) {
        // glibc's makedev(): the 64-bit dev_t keeps the old 8+8 bits low and the rest above.
        long dev = ((major & 0xfffff000L) << 32)
                | ((major & 0xfffL) << 8)
                | ((minor & 0xffffff00L) << 12)
                | (minor & 0xffL);
        Libc.call(
                "mknod",
                call -> call.check(
                        (int) Mknod.HANDLE.invokeExact(call.state(), call.string(path), Libc.S_IFBLK | mode, dev)));
    }

    /** Binds mknod(2) by making it once where it fails harmlessly (an empty path), as {@link Libc#prepare} does its own. */
    static void prepare() {
        Libc.prepareByFailing(() -> mknodBlock("", 0, 0, 0));
    }

    /** mknod(2), bound when first used, as Libc binds its calls. */
    private static final class Mknod {
        static final MethodHandle HANDLE =
                Libc.bind("mknod", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_LONG), -1);
    }

    private static int open(Path path, int flags, String what) {
        try {
            return Libc.open(path.toString(), flags | Libc.O_NOFOLLOW, 0);
        } catch (Libc.ErrnoException e) {
            throw StorageException.internal("cannot open %s %s: %s", what, path, e.getMessage());
        }
    }
}
