package dev.blockpool.pool.transfer;

import dev.blockpool.pool.extents.ByteRange;
import java.util.List;
import java.util.Optional;

/**
 * An image opened for one transfer, as its destination reads it: the source's side serves one of
 * these ({@link ImageExports}), the peer module carries its calls, and the destination reads it as
 * a {@link RemoteImage}. Every call may wait on a pool's filesystem or the network.
 */
public interface ImageReader extends AutoCloseable {

    /** The most bytes one {@link #read} returns: one chunk, one message on the wire. */
    int MAX_CHUNK_BYTES = 1 << 20;

    /** The image's size in bytes. */
    long sizeBytes();

    /**
     * Names the image's bytes as the source froze them for this transfer: a pull resumes onto what
     * it already holds only when the identity is the one it started from, and a later transfer
     * names it as its basis to receive only what changed since.
     */
    String identity();

    /**
     * The identity of the earlier image the ranges are relative to, when the transfer was opened on
     * a basis the source still keeps: its ranges are then only those changed since, a range that
     * became a hole among them (read, it is zeros). Empty when the ranges are all that hold data.
     */
    Optional<String> basis();

    /**
     * At most {@code max} ranges that hold data (or, when the transfer was opened on a basis, that
     * changed since it), from {@code from}, in increasing order; empty past the last.
     */
    List<ByteRange> ranges(long from, int max);

    /** {@code length} bytes (at most {@link #MAX_CHUNK_BYTES}) at {@code offset}, with their checksum. */
    Chunk read(long offset, int length);

    /** Ends this reader's use of the image; the source keeps what it froze until the transfer is released. */
    @Override
    void close();
}
