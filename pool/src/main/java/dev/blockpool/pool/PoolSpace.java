package dev.blockpool.pool;

import dev.blockpool.common.CsiException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The room left on the pool's filesystem. Images are sparse, but the driver does not promise
 * more than the filesystem can hold: a volume larger than the whole filesystem is out of range,
 * one larger than what is free now exhausts the pool.
 */
public final class PoolSpace {

    private final Path root;

    PoolSpace(Path root) {
        this.root = root;
    }

    public long availableBytes() {
        try {
            return store().getUsableSpace();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the free space of " + root, e);
        }
    }

    public long totalBytes() {
        try {
            return store().getTotalSpace();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the size of " + root, e);
        }
    }

    void requireRoomFor(long bytes) {
        long total = totalBytes();
        if (bytes > total) {
            throw CsiException.outOfRange("%d bytes is more than the pool's filesystem holds (%d bytes)", bytes, total);
        }
        long available = availableBytes();
        if (bytes > available) {
            throw CsiException.resourceExhausted("the pool has %d bytes free, %d bytes were asked for", available, bytes);
        }
    }

    private FileStore store() throws IOException {
        return Files.getFileStore(root);
    }
}
