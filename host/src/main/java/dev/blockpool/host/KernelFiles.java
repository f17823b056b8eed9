package dev.blockpool.host;

import dev.blockpool.common.Libc;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * Reads of the files the kernel writes as they are read: sysfs attributes and links, and
 * {@code /proc/self/mountinfo}. Every node call reads some, so they are read by plain system
 * calls ({@link Libc#readFile}) rather than through the JDK's file channels, which cost more
 * than the reads themselves; failures are the JDK's exceptions, as a {@code Files} read throws
 * them (a missing file is a {@link NoSuchFileException}).
 */
final class KernelFiles {

    /** sysfs gives at most a page per attribute. */
    static final int ATTRIBUTE_BYTES = 4096;

    private KernelFiles() {
    }

    /** The file's text; bytes that are no UTF-8 (a mount point's odd name) read as U+FFFD. */
    static String read(Path file, int sizeHint) throws IOException {
        try {
            return new String(Libc.readFile(file.toString(), sizeHint), StandardCharsets.UTF_8);
        } catch (Libc.ErrnoException e) {
            throw failure(file, e);
        }
    }

    /** A sysfs attribute, without its trailing newline. */
    static String attribute(Path file) throws IOException {
        return read(file, ATTRIBUTE_BYTES).strip();
    }

    /** Where the link points, as written in it. */
    static Path link(Path link) throws IOException {
        try {
            return Path.of(Libc.readlink(link.toString()));
        } catch (Libc.ErrnoException e) {
            throw failure(link, e);
        }
    }

    private static IOException failure(Path file, Libc.ErrnoException e) {
        return e.errno() == Libc.ENOENT ? new NoSuchFileException(file.toString())
                : new FileSystemException(file.toString(), null, e.getMessage());
    }
}
