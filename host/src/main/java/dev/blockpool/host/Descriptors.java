package dev.blockpool.host;

import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import java.nio.file.Path;

/** What the host's system-call classes do with a descriptor they have just opened. */
final class Descriptors {

    private Descriptors() {}

    /** statx(2) of the descriptor of {@code path}; when that fails, the descriptor is closed. */
    static Libc.Stat statOrClose(int fd, Path path) {
        try {
            return Libc.stat(fd);
        } catch (Libc.ErrnoException e) {
            Libc.close(fd);
            throw StorageException.internal("cannot inspect %s: %s", path, e.getMessage());
        }
    }
}
