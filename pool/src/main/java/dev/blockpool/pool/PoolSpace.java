package dev.blockpool.pool;

import dev.blockpool.common.StorageException;
import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The room left on the pool's filesystem. Sparse images make the pool thinly provisioned: each
 * new volume must fit in what is free now (larger than the whole filesystem is out of range,
 * larger than the free space exhausts the pool), but the sum of all volumes may exceed the
 * filesystem, and writes into a full pool fail with ENOSPC inside the pod. Use the
 * {@code preallocated} allocation where that is not acceptable.
 */
public final class PoolSpace {

    private final Path root;
    private volatile FileStore store;

    PoolSpace(Path root) {
        this.root = root;
    }

    public long availableBytes() {
        try {
            return store().getUsableSpace();
        } catch (IOException e) {
            throw StorageException.io(e, "cannot read the free space of the pool %s", root);
        }
    }

    public long totalBytes() {
        try {
            return store().getTotalSpace();
        } catch (IOException e) {
            throw StorageException.io(e, "cannot read the size of the pool %s", root);
        }
    }

    /** Refuses a size that cannot fit; compares only, so sizes near 2^63 cannot overflow. */
    void requireRoomFor(long bytes) {
        if (bytes < 0) {
            throw StorageException.invalid("%d bytes is not a size", bytes);
        }
        long total = totalBytes();
        if (bytes > total) {
            throw StorageException.outOfRange(
                    "%d bytes is more than the pool's filesystem holds (%d bytes)", bytes, total);
        }
        long available = availableBytes();
        if (bytes > available) {
            throw StorageException.noSpace("the pool has %d bytes free, %d bytes were asked for", available, bytes);
        }
    }

    /**
     * Looked up once: the lookup reads the whole mount table, which on a node grows with every
     * volume staged there. What it answers is read afresh on each call (statvfs of the pool's
     * path), so nothing of it can go stale.
     */
    private FileStore store() throws IOException {
        FileStore found = store;
        if (found == null) {
            found = Files.getFileStore(root);
            store = found;
        }
        return found;
    }
}
