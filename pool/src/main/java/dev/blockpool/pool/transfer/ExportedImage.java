package dev.blockpool.pool.transfer;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.StorageException;
import dev.blockpool.pool.extents.ByteRange;
import dev.blockpool.pool.extents.SnapshotRanges;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.zip.CRC32C;

/**
 * An image of this pool served to one pull: a snapshot's own image, or a volume's frozen copy.
 * Its ranges are found from the filesystem's knowledge of the image ({@link SnapshotRanges}):
 * those that hold data, or, on a basis the source still keeps, those that changed since. Every
 * call on the image runs on the threads for calls that can hang, with a deadline.
 */
final class ExportedImage implements ImageReader {

    /** The most ranges one {@link #ranges} call answers, whatever is asked: one message on the wire. */
    static final int MAX_RANGES = 16_384;
    /** A read of a chunk, or a step of finding ranges, that takes longer is taken for a pool that does not answer. */
    static final Duration CALL_DEADLINE = Duration.ofMinutes(1);

    private final Path image;
    private final long sizeBytes;
    private final String identity;
    private final Optional<Basis> basis;
    private final String what;
    private final BlockingCalls blocking;
    private final Runnable used;
    private FileChannel channel;

    /** The earlier image of the same source that the destination holds, as the source keeps it. */
    record Basis(Path image, String identity) {}

    /**
     * @param basis the image the destination holds, when the source keeps it: ranges are then those changed since
     * @param what the image, as messages name it ("volume V frozen for transfer T")
     * @param used told at each ranges call, so that an export in use is not taken for abandoned
     */
    ExportedImage(
            Path image,
            long sizeBytes,
            String identity,
            Optional<Basis> basis,
            String what,
            BlockingCalls blocking,
            Runnable used) {
        this.image = image;
        this.sizeBytes = sizeBytes;
        this.identity = identity;
        this.basis = basis;
        this.what = what;
        this.blocking = blocking;
        this.used = used;
    }

    @Override
    public long sizeBytes() {
        return sizeBytes;
    }

    @Override
    public String identity() {
        return identity;
    }

    @Override
    public Optional<String> basis() {
        return basis.map(Basis::identity);
    }

    @Override
    public List<ByteRange> ranges(long from, int max) {
        if (from < 0 || from > sizeBytes || max < 1) {
            throw StorageException.outOfRange(
                    "ranges from offset %d, at most %d, asked of %s, which holds %d bytes: give an offset from 0 to %d "
                            + "and at least 1 range",
                    from, max, what, sizeBytes, sizeBytes);
        }
        blocking.run(CALL_DEADLINE, "marking " + what + " used", used);
        try (SnapshotRanges ranges = basis.isPresent()
                ? SnapshotRanges.delta(
                        basis.get().image(),
                        what + " (its basis)",
                        image,
                        what,
                        from,
                        sizeBytes,
                        blocking,
                        "finding the ranges of " + what + " changed since its basis")
                : SnapshotRanges.allocated(
                        image, what, from, sizeBytes, blocking, "finding the data ranges of " + what)) {
            return ranges.next(Math.min(max, MAX_RANGES), () -> false);
        }
    }

    @Override
    public Chunk read(long offset, int length) {
        if (length < 1 || length > MAX_CHUNK_BYTES || offset < 0 || offset > sizeBytes - length) {
            throw StorageException.outOfRange(
                    "%d bytes at offset %d asked of %s, which holds %d bytes: a read is 1 to %d bytes within the image",
                    length, offset, what, sizeBytes, MAX_CHUNK_BYTES);
        }
        return blocking.call(CALL_DEADLINE, "reading " + length + " bytes at " + offset + " of " + what, () -> {
            byte[] data = new byte[length];
            ByteBuffer buffer = ByteBuffer.wrap(data);
            try {
                FileChannel file = channel();
                while (buffer.hasRemaining()) {
                    if (file.read(buffer, offset + buffer.position()) < 0) {
                        break; // past the end of the file: zeros, as a hole reads
                    }
                }
            } catch (IOException e) {
                throw StorageException.io(e, "cannot read %s", what);
            }
            CRC32C crc = new CRC32C();
            crc.update(data);
            return new Chunk(offset, data, (int) crc.getValue());
        });
    }

    /** The image, opened at the first read and kept until the reader is closed. */
    private synchronized FileChannel channel() throws IOException {
        if (channel == null) {
            try {
                channel = FileChannel.open(image, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS);
            } catch (NoSuchFileException e) {
                throw StorageException.notFound("%s is gone (deleted, or its transfer released)", what);
            }
        }
        return channel;
    }

    @Override
    public synchronized void close() {
        if (channel != null) {
            try {
                channel.close();
            } catch (IOException e) {
                // a descriptor that was only read: nothing is lost
            }
            channel = null;
        }
    }
}
