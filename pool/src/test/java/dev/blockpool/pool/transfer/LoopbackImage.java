package dev.blockpool.pool.transfer;

import dev.blockpool.pool.extents.ByteRange;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link RemoteImage} that is another pool's {@link ImageReader} in this process, as the peer
 * channel would carry it, counting the bytes read through it. Tests make it misbehave by
 * overriding a call.
 */
public class LoopbackImage implements RemoteImage {

    private final String node;
    private final ImageReader reader;
    /** Bytes read through {@link #read}, damaged or not. */
    public final AtomicLong bytesRead = new AtomicLong();

    public LoopbackImage(String node, ImageReader reader) {
        this.node = node;
        this.reader = reader;
    }

    @Override
    public String node() {
        return node;
    }

    @Override
    public long sizeBytes() {
        return reader.sizeBytes();
    }

    @Override
    public String identity() {
        return reader.identity();
    }

    @Override
    public Optional<String> basis() {
        return reader.basis();
    }

    @Override
    public List<ByteRange> ranges(long from, int max) {
        return reader.ranges(from, max);
    }

    @Override
    public Chunk read(long offset, int length) {
        Chunk chunk = reader.read(offset, length);
        bytesRead.addAndGet(chunk.data().length);
        return chunk;
    }

    @Override
    public void close() {
        reader.close();
    }
}
