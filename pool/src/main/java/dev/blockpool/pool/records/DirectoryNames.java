package dev.blockpool.pool.records;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import dev.blockpool.common.Libc;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The names of a directory of records, read with getdents64(2) (bound here, its one caller, and
 * called through {@link Libc#call}), declared with its struct {@code linux_dirent64}.
 */
final class DirectoryNames {

    /** Room for some 16,000 directory entries of the pool's names per getdents64 call. */
    private static final long BUFFER_BYTES = 1 << 20;

    private static final long PAGE_BUFFER_BYTES = 64 << 10;
    private static final int SEEK_SET = 0;

    private DirectoryNames() {}

    /** A name read from a directory, and the position at which reading resumes after it (its d_off). */
    record Entry(String name, long resumeAt) {}

    /**
     * What {@link #read} read: the names wanted, in the directory's own order, and whether the
     * directory ended before {@code count} of them were found.
     */
    record Read(List<Entry> entries, boolean end) {}

    /**
     * At most {@code count} names ending with {@code suffix}, in the directory's own order,
     * starting at position {@code from} (0 for the start; else a {@link Entry#resumeAt}
     * read before), read with getdents64(2) into one large buffer: a Java string is made only for
     * the names wanted, which in a directory of thousands of files is most of what listing it
     * costs in Java. Positions are the cookies telldir(3) and NFS use: ext4 and XFS keep them valid
     * while other names are added and removed, so a listing can resume where it stopped without
     * reading the names before it again.
     */
    static Read read(String path, String suffix, long from, int count) {
        byte[] wanted = suffix.getBytes(StandardCharsets.UTF_8);
        List<Entry> entries = new ArrayList<>();
        int fd = Libc.open(path, Libc.O_RDONLY | Libc.O_DIRECTORY, 0);
        try (Arena arena = Arena.ofConfined()) {
            if (from != 0) {
                Libc.lseek(fd, from, SEEK_SET);
            }
            // A page needs a few hundred names; a whole listing reads in large steps.
            long size = count == Integer.MAX_VALUE ? BUFFER_BYTES : PAGE_BUFFER_BYTES;
            MemorySegment buffer = arena.allocate(size, 8);
            long filled;
            while ((filled = getdents64(fd, buffer)) > 0) {
                long recordLength;
                for (long entry = 0; entry < filled; entry += recordLength) {
                    recordLength = Short.toUnsignedInt((short) Getdents64.D_RECLEN.get(buffer, entry));
                    long name = entry + Getdents64.D_NAME;
                    int length = 0;
                    while (buffer.get(JAVA_BYTE, name + length) != 0) {
                        length++;
                    }
                    if (endsWith(buffer, name, length, wanted)) {
                        entries.add(new Entry(buffer.getString(name, StandardCharsets.UTF_8), (long)
                                Getdents64.D_OFF.get(buffer, entry)));
                        if (entries.size() == count) {
                            return new Read(entries, false);
                        }
                    }
                }
            }
            return new Read(entries, true);
        } finally {
            Libc.close(fd);
        }
    }

    /** getdents64(2): fills {@code buffer} with the directory's next records; how many bytes they take, 0 at its end. */
    private static long getdents64(int fd, MemorySegment buffer) {
        return Libc.call(
                "getdents64",
                call -> call.check((long) Getdents64.HANDLE.invokeExact(call.state(), fd, buffer, buffer.byteSize())));
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

    /** Bound when first used, as every C function is: see {@link Libc}. */
    private static final class Getdents64 {
        static final MethodHandle HANDLE =
                Libc.bind("getdents64", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG), -1);
        /** struct linux_dirent64 (getdents64(2)): records of this shape, 8-aligned, fill the buffer. */
        static final StructLayout LINUX_DIRENT64 = MemoryLayout.structLayout(
                        JAVA_LONG.withName("d_ino"),
                        JAVA_LONG.withName("d_off"),
                        JAVA_SHORT.withName("d_reclen"),
                        JAVA_BYTE.withName("d_type"),
                        MemoryLayout.sequenceLayout(0, JAVA_BYTE).withName("d_name"))
                .withName("linux_dirent64");
        // Read at a record's offset in the buffer: the handles keep their offset coordinate.
        static final VarHandle D_OFF = LINUX_DIRENT64.varHandle(PathElement.groupElement("d_off"));
        static final VarHandle D_RECLEN = LINUX_DIRENT64.varHandle(PathElement.groupElement("d_reclen"));
        /** Where the NUL-terminated name starts in a record. */
        static final long D_NAME = LINUX_DIRENT64.byteOffset(PathElement.groupElement("d_name"));
    }
}
