package dev.blockpool.pool;

import dev.blockpool.common.StorageException;
import dev.blockpool.common.TestKillPoint;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * Crash-safe file updates: write a temporary file, fsync it, rename it over the target, fsync
 * the directory. After a crash the target holds either the old or the new content, never a
 * torn mix; a leftover temporary file is removed by the pool's start-up reconcile.
 */
public final class DurableFiles {

    /** Temporary files end with this suffix; nothing else in the pool does. */
    public static final String TEMP_SUFFIX = ".tmp";

    private DurableFiles() {}

    public static void write(Path target, byte[] content) {
        prepare(target, content).publish();
    }

    /**
     * {@code target}'s next content, written to its temporary file and flushed, but not in place
     * until {@link Prepared#publish()}: a crash before then leaves {@code target} as it was and a
     * temporary file. What must be durable before the new content may be seen (an image its record
     * names) is flushed in between.
     */
    static Prepared prepare(Path target, byte[] content) {
        Path temp = tempPath(target);
        try (FileChannel channel = FileChannel.open(
                temp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE)) {
            ByteBuffer buffer = ByteBuffer.wrap(content);
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
            channel.force(true);
            TestKillPoint.reached("record.temp-written");
        } catch (IOException e) {
            deleteQuietly(temp);
            throw StorageException.io(e, "cannot write %s", target);
        }
        return new Prepared(temp, target);
    }

    /** A flushed temporary file that becomes {@code target}, or is discarded. */
    record Prepared(Path temp, Path target) {

        /** Renames the temporary file over the target and flushes the directory, which makes the rename durable. */
        void publish() {
            try {
                Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                syncDirectory(target.getParent());
            } catch (IOException e) {
                discard();
                throw StorageException.io(e, "cannot write %s", target);
            }
        }

        /** Removes the temporary file; the target stays as it was. */
        void discard() {
            deleteQuietly(temp);
        }
    }

    /** Where this thread writes {@code target}'s next content before renaming it into place. */
    static Path tempPath(Path target) {
        return target.resolveSibling(target.getFileName() + "."
                + ProcessHandle.current().pid() + "-" + Thread.currentThread().threadId() + TEMP_SUFFIX);
    }

    /** Deletes the file and makes the deletion durable; a missing file is fine. */
    public static boolean delete(Path target) {
        try {
            boolean deleted = Files.deleteIfExists(target);
            if (deleted) {
                syncDirectory(target.getParent());
            }
            return deleted;
        } catch (IOException e) {
            throw StorageException.io(e, "cannot delete %s", target);
        }
    }

    public static void fsync(Path file) {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
            channel.force(true);
        } catch (IOException e) {
            throw StorageException.io(e, "cannot flush %s to disk", file);
        }
    }

    public static void syncDirectory(Path directory) {
        try (FileChannel channel = FileChannel.open(directory, StandardOpenOption.READ)) {
            channel.force(true);
        } catch (IOException e) {
            throw StorageException.io(e, "cannot flush directory %s to disk", directory);
        }
    }

    private static void deleteQuietly(Path path) {
        try {
            Files.deleteIfExists(path);
        } catch (IOException ignored) {
            // the reconcile at the next start removes it
        }
    }
}
