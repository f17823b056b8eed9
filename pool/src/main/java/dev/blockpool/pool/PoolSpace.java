package dev.blockpool.pool;

import dev.blockpool.common.StorageException;
import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The pool filesystem's size and free bytes, as statvfs(2) answers them now. What the pool may
 * promise of them is {@link PoolCapacity}'s.
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
