package dev.blockpool.common;

import java.nio.file.Path;

/** What a system-call class does with a descriptor it has just opened. */
public final class Descriptors {

    private Descriptors() {}

    /** statx(2) of the descriptor of {@code path}; when that fails, the descriptor is closed. */
    public static Libc.Stat statOrClose(int fd, Path path) {
        try {
            return Libc.stat(fd);
        } catch (Libc.ErrnoException e) {
            Libc.close(fd);
            throw StorageException.internal("cannot inspect %s: %s", path, e.getMessage());
        }
    }
}
