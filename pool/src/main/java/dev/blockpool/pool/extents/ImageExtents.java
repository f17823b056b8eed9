package dev.blockpool.pool.extents;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * What the pool's filesystem knows of an image's layout, read through an open descriptor: where
 * its data lies (lseek's SEEK_DATA and SEEK_HOLE), which physical extents hold it (the FIEMAP
 * ioctl, declared here with its structs), and its bytes (pread, bound here). Every call may wait on the
 * pool's filesystem: callers make them through {@code BlockingCalls}.
 */
public final class ImageExtents implements StoredImage {

    /** FS_IOC_FIEMAP, _IOWR('f', 11, struct fiemap) (linux/fs.h). */
    private static final Libc.Ioctl FS_IOC_FIEMAP = new Libc.Ioctl("FS_IOC_FIEMAP", 0xC020660BL);
    /** lseek(2)'s whences that find the next byte of data, or of a hole, at or after an offset (Linux 3.1). */
    private static final int SEEK_DATA = 3;

    private static final int SEEK_HOLE = 4;
    /** fm_flags: flush the file's dirty pages first, so delayed allocations have their place. */
    private static final int FIEMAP_FLAG_SYNC = 0x1;

    /** struct fiemap (linux/fiemap.h), followed by fm_extent_count struct fiemap_extent. */
    private static final StructLayout FIEMAP = MemoryLayout.structLayout(
                    JAVA_LONG.withName("fm_start"),
                    JAVA_LONG.withName("fm_length"),
                    JAVA_INT.withName("fm_flags"),
                    JAVA_INT.withName("fm_mapped_extents"),
                    JAVA_INT.withName("fm_extent_count"),
                    JAVA_INT.withName("fm_reserved"))
            .withName("fiemap");

    private static final StructLayout FIEMAP_EXTENT = MemoryLayout.structLayout(
                    JAVA_LONG.withName("fe_logical"),
                    JAVA_LONG.withName("fe_physical"),
                    JAVA_LONG.withName("fe_length"),
                    MemoryLayout.sequenceLayout(2, JAVA_LONG).withName("fe_reserved64"),
                    JAVA_INT.withName("fe_flags"),
                    MemoryLayout.sequenceLayout(3, JAVA_INT).withName("fe_reserved"))
            .withName("fiemap_extent");

    private static final VarHandle FM_START = Libc.field(FIEMAP, "fm_start");
    private static final VarHandle FM_LENGTH = Libc.field(FIEMAP, "fm_length");
    private static final VarHandle FM_FLAGS = Libc.field(FIEMAP, "fm_flags");
    private static final VarHandle FM_MAPPED_EXTENTS = Libc.field(FIEMAP, "fm_mapped_extents");
    private static final VarHandle FM_EXTENT_COUNT = Libc.field(FIEMAP, "fm_extent_count");
    private static final VarHandle FE_LOGICAL = Libc.field(FIEMAP_EXTENT, "fe_logical");
    private static final VarHandle FE_PHYSICAL = Libc.field(FIEMAP_EXTENT, "fe_physical");
    private static final VarHandle FE_LENGTH = Libc.field(FIEMAP_EXTENT, "fe_length");
    private static final VarHandle FE_FLAGS = Libc.field(FIEMAP_EXTENT, "fe_flags");

    private final Path image;
    private final int fd;

    private ImageExtents(Path image, int fd) {
        this.image = image;
        this.fd = fd;
    }

    /** Opens {@code image} for reading, not following a symlink; NOT_FOUND when it is gone. */
    public static ImageExtents open(Path image, String what) {
        try {
            return new ImageExtents(image, Libc.open(image.toString(), Libc.O_RDONLY | Libc.O_NOFOLLOW, 0));
        } catch (Libc.ErrnoException e) {
            if (e.errno() == Libc.ENOENT) {
                throw StorageException.notFound("%s has no image any more (deleted meanwhile)", what);
            }
            throw StorageException.io(e, "cannot open the image of %s", what);
        }
    }

    @Override
    public long blockSize() {
        try {
            return Libc.fstatfs(fd).fragmentSize();
        } catch (Libc.ErrnoException e) {
            throw StorageException.io(e, "cannot read the block size of the filesystem of %s", image);
        }
    }

    @Override
    public Optional<ByteRange> dataFrom(long from, long end) {
        if (from >= end) {
            return Optional.empty();
        }
        long data;
        try {
            data = Libc.lseek(fd, from, SEEK_DATA);
        } catch (Libc.ErrnoException e) {
            if (e.errno() == Libc.ENXIO) {
                return Optional.empty(); // no data after from
            }
            throw StorageException.io(e, "cannot look for data in %s", image);
        }
        if (data >= end) {
            return Optional.empty();
        }
        try {
            return Optional.of(ByteRange.between(data, Math.min(Libc.lseek(fd, data, SEEK_HOLE), end)));
        } catch (Libc.ErrnoException e) {
            throw StorageException.io(e, "cannot look for a hole in %s", image);
        }
    }

    @Override
    public Mapping map(long from, long to, int max) {
        return map(from, to, max, FIEMAP_FLAG_SYNC);
    }

    /**
     * The bytes of the image's extents that the filesystem flags shared with other files
     * (reflinks), as they are on disk: its dirty pages are not flushed first, so a write since
     * the last writeback still counts as the extent it will replace. EOPNOTSUPP as {@link #map}.
     */
    public long sharedBytes(long size, int extentsPerCall) {
        long shared = 0;
        long at = 0;
        while (at < size) {
            Mapping mapping = map(at, size, extentsPerCall, 0);
            for (Extent extent : mapping.extents()) {
                if (extent.shared()) {
                    shared += extent.length();
                }
            }
            if (mapping.complete()) {
                break;
            }
            at = mapping.extents().getLast().end();
        }
        return shared;
    }

    private Mapping map(long from, long to, int max, int requestFlags) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment request = arena.allocate(FIEMAP.byteSize() + max * FIEMAP_EXTENT.byteSize(), 8);
            FM_START.set(request, from);
            FM_LENGTH.set(request, to - from);
            FM_FLAGS.set(request, requestFlags);
            FM_EXTENT_COUNT.set(request, max);
            Libc.ioctl(fd, FS_IOC_FIEMAP, request);
            int mapped = (int) FM_MAPPED_EXTENTS.get(request);
            List<Extent> extents = new ArrayList<>(mapped);
            boolean last = false;
            for (int i = 0; i < mapped; i++) {
                MemorySegment extent =
                        request.asSlice(FIEMAP.byteSize() + i * FIEMAP_EXTENT.byteSize(), FIEMAP_EXTENT.byteSize());
                int flags = (int) FE_FLAGS.get(extent);
                extents.add(new Extent(
                        (long) FE_LOGICAL.get(extent),
                        (long) FE_PHYSICAL.get(extent),
                        (long) FE_LENGTH.get(extent),
                        flags));
                last |= (flags & Extent.LAST) != 0;
            }
            boolean complete = last || mapped < max || extents.getLast().end() >= to;
            return new Mapping(extents, complete);
        }
    }

    /** {@link #map} answered EOPNOTSUPP: the filesystem does not map its files' extents. */
    public static boolean cannotMap(Libc.ErrnoException e) {
        return e.errno() == Libc.EOPNOTSUPP || e.errno() == Libc.ENOTTY;
    }

    @Override
    public void read(long offset, MemorySegment buffer) {
        long done = 0;
        while (done < buffer.byteSize()) {
            long read;
            try {
                read = pread(buffer.asSlice(done), offset + done);
            } catch (Libc.ErrnoException e) {
                throw StorageException.io(e, "cannot read %s", image);
            }
            if (read == 0) {
                buffer.asSlice(done).fill((byte) 0);
                return;
            }
            done += read;
        }
    }

    /** pread(2) of up to {@code buffer}'s size at {@code offset}: how many bytes were read, 0 at the end of the file. */
    private long pread(MemorySegment buffer, long offset) {
        return Libc.call(
                "pread",
                call -> call.check(
                        (long) Pread.HANDLE.invokeExact(call.state(), fd, buffer, buffer.byteSize(), offset)));
    }

    @Override
    public void close() {
        Libc.close(fd);
    }

    /** pread(2), bound here beside its one caller when first used, as every C function is: see {@link Libc}. */
    private static final class Pread {
        static final MethodHandle HANDLE =
                Libc.bind("pread", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG), -1);
    }

    /** Some extents of an image, and whether they are all of those in the range asked. */
    record Mapping(List<Extent> extents, boolean complete) {}

    /** One struct fiemap_extent: {@code length} bytes at {@code logical} in the file, stored at {@code physical}. */
    record Extent(long logical, long physical, long length, int flags) {

        static final int LAST = 0x1;
        static final int UNKNOWN = 0x2;
        static final int DELALLOC = 0x4;
        static final int ENCODED = 0x8;
        static final int DATA_ENCRYPTED = 0x80;
        static final int NOT_ALIGNED = 0x100;
        static final int DATA_INLINE = 0x200;
        static final int DATA_TAIL = 0x400;
        static final int UNWRITTEN = 0x800;
        static final int SHARED = 0x2000;
        /** Flags under which fe_physical does not name where the bytes are, so two equal ones prove nothing. */
        private static final int NOT_PLACED =
                UNKNOWN | DELALLOC | ENCODED | DATA_ENCRYPTED | NOT_ALIGNED | DATA_INLINE | DATA_TAIL;

        long end() {
            return logical + length;
        }

        /** Allocated but never written (fallocate): it reads as zeros, as a hole does. */
        boolean readsAsZeros() {
            return (flags & UNWRITTEN) != 0;
        }

        /** Whether {@link #physical} says where the bytes are stored. */
        boolean placed() {
            return (flags & NOT_PLACED) == 0;
        }

        /** Whether other files (a reflink) share this extent. */
        boolean shared() {
            return (flags & SHARED) != 0;
        }
    }
}
