package dev.blockpool.pool.transfer;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import java.lang.foreign.FunctionDescriptor;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;

/**
 * Holes punched in a pulled image with fallocate(2) (FALLOC_FL_PUNCH_HOLE): a delta round makes a
 * range that became a hole on the source a hole here too, so that a moved image stays as sparse
 * as its source rather than holding zeros. Where the filesystem cannot punch holes, the caller
 * writes the zeros instead, which read the same.
 */
final class HolePunch implements AutoCloseable {

    private static final int FALLOC_FL_KEEP_SIZE = 0x01;
    private static final int FALLOC_FL_PUNCH_HOLE = 0x02;

    private final Path image;
    private final int fd;

    HolePunch(Path image) {
        this.image = image;
        try {
            this.fd = Libc.open(image.toString(), Libc.O_WRONLY | Libc.O_NOFOLLOW, 0);
        } catch (Libc.ErrnoException e) {
            throw StorageException.io(e, "cannot open %s to punch holes in it", image);
        }
    }

    /** Makes {@code length} bytes at {@code offset} a hole; false where the filesystem cannot. */
    boolean punch(long offset, long length) {
        try {
            Libc.call(
                    "fallocate",
                    call -> call.check((int) Fallocate.HANDLE.invokeExact(
                            call.state(), fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length)));
            return true;
        } catch (Libc.ErrnoException e) {
            if (e.errno() == Libc.EOPNOTSUPP) {
                return false;
            }
            throw StorageException.io(e, "cannot punch a hole of %d bytes at %d in %s", length, offset, image);
        }
    }

    @Override
    public void close() {
        Libc.close(fd);
    }

    /** Bound at its first use, as Libc binds each of its own. */
    private static final class Fallocate {
        static final MethodHandle HANDLE =
                Libc.bind("fallocate", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG), -1);
    }
}
