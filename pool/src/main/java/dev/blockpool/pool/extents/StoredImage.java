package dev.blockpool.pool.extents;

import java.lang.foreign.MemorySegment;
import java.util.Optional;

/**
 * An image as the pool's filesystem stores it, read through an open descriptor: what changed
 * block tracking asks of it ({@link ImageExtents} on the real filesystem). Every call may wait on
 * the pool's filesystem: callers make them on the threads for system calls that can hang.
 */
interface StoredImage extends AutoCloseable {

    /** The size of the pool filesystem's blocks: the finest unit in which its files differ. */
    long blockSize();

    /** The first range of data at or after {@code from} and before {@code end}, cut at {@code end}; empty when none. */
    Optional<ByteRange> dataFrom(long from, long end);

    /**
     * The extents of the image that overlap {@code [from, to)}, in order, at most {@code max}
     * of them (the first may begin before {@code from}); {@link ImageExtents.Mapping#complete}
     * when no more lie before {@code to}. EOPNOTSUPP where the filesystem cannot tell (NFS, tmpfs).
     */
    ImageExtents.Mapping map(long from, long to, int max);

    /** Fills {@code buffer} with the image's bytes from {@code offset}; past its end with zeros, as a volume that grew reads. */
    void read(long offset, MemorySegment buffer);

    @Override
    void close();
}
