package dev.blockpool.pool.records;

import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import dev.blockpool.common.TestKillPoint;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;

/**
 * Crash-safe file updates: write a temporary file, fsync it, rename it over the target, fsync
 * the directory. After a crash the target holds either the old or the new content, never a
 * torn mix. A write that fails or gives up removes its temporary file; one a kill left is
 * removed when the pool next opens, or by its reconcile.
 *
 * <p>Its writer holds a flock(2) on the temporary file from before it writes it until it is
 * renamed or removed, so that the reconcile after a restart can tell a kill's leftover (its
 * lock is free: the kernel dropped it with the dead process) from a file another process, on
 * this host or another sharing the pool, is writing now, and remove the leftover at once rather
 * than after the settle time. Such files end with {@link #HELD_SUFFIX}; others (of an older
 * driver, which took no lock) wait for the settle time.
 */
public final class DurableFiles {

    /** Temporary files end with this suffix; nothing else in the pool does. */
    public static final String TEMP_SUFFIX = ".tmp";

    /** Temporary files whose writer holds a flock on them while it lives. */
    public static final String HELD_SUFFIX = ".held" + TEMP_SUFFIX;

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
    public static Prepared prepare(Path target, byte[] content) {
        Path temp = tempPath(target);
        int lock = hold(temp, target);
        try (FileChannel channel = FileChannel.open(
                temp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE)) {
            ByteBuffer buffer = ByteBuffer.wrap(content);
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
            channel.force(true);
            TestKillPoint.reached("record.temp-written");
        } catch (IOException e) {
            giveUp(temp, lock);
            throw StorageException.io(e, "cannot write %s", target);
        } catch (RuntimeException e) {
            giveUp(temp, lock);
            throw e;
        }
        return new Prepared(temp, target, lock);
    }

    /**
     * Creates (or opens) the temporary file and takes its flock, on the file that is at the path
     * once it has the lock: a reconcile that removed the file under the lock meanwhile has left
     * a lock on nothing, and then it starts again. Returns the descriptor that holds the lock.
     */
    private static int hold(Path temp, Path target) {
        while (true) {
            int fd;
            try {
                fd = Libc.open(temp.toString(), Libc.O_RDWR | Libc.O_CREAT | Libc.O_NOFOLLOW, 0644);
            } catch (Libc.ErrnoException e) {
                deleteQuietly(temp);
                throw StorageException.io(e, "cannot write %s", target);
            }
            try {
                Flock.tryLockExclusive(fd);
                if (sameFile(temp, fd)) {
                    return fd;
                }
            } catch (Libc.ErrnoException e) {
                if (e.errno() != Libc.EWOULDBLOCK) {
                    giveUp(temp, fd);
                    throw StorageException.io(e, "cannot lock %s", temp);
                }
            }
            // A reconcile looks at the file: it holds the lock for a moment. Not blocking in
            // flock, which would hold a virtual thread's carrier.
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                giveUp(temp, fd);
                throw StorageException.busy("interrupted while writing %s", target);
            }
            Libc.close(fd);
        }
    }

    /**
     * Removes this writer's temporary file, when {@code temp} still names the file open at
     * {@code fd}, and closes {@code fd}: a write that ends without its rename leaves nothing
     * behind. The name is this thread's alone ({@link #tempPath}), so no other write is robbed.
     */
    private static void giveUp(Path temp, int fd) {
        try {
            if (sameFile(temp, fd)) {
                deleteQuietly(temp);
            }
        } finally {
            Libc.close(fd);
        }
    }

    /**
     * Removes {@code temp}, a temporary file, when its writer is gone: its lock is free. Returns
     * whether it removed it; a file being written now, or gone already, is left.
     */
    public static boolean removeIfAbandoned(Path temp) {
        int fd;
        try {
            fd = Libc.open(temp.toString(), Libc.O_RDWR | Libc.O_NOFOLLOW, 0);
        } catch (Libc.ErrnoException e) {
            if (e.errno() == Libc.ENOENT) {
                return false;
            }
            throw StorageException.io(e, "cannot open %s", temp);
        }
        try {
            Flock.tryLockExclusive(fd);
            if (!sameFile(temp, fd)) {
                return false;
            }
            delete(temp); // under the lock: a writer that waited for it finds the path empty and starts again
            return true;
        } catch (Libc.ErrnoException e) {
            if (e.errno() == Libc.EWOULDBLOCK) {
                return false;
            }
            throw StorageException.io(e, "cannot lock %s", temp);
        } finally {
            Libc.close(fd);
        }
    }

    /**
     * The temporary files in {@code directory} whose writers are gone, each removed as {@link
     * #removeIfAbandoned} does; the names of those removed.
     */
    public static List<Path> removeAbandoned(Path directory) {
        List<DirectoryNames.Entry> held;
        try {
            held = DirectoryNames.read(directory.toString(), HELD_SUFFIX, 0, Integer.MAX_VALUE)
                    .entries();
        } catch (Libc.ErrnoException e) {
            throw StorageException.io(e, "cannot list the pool directory %s", directory);
        }
        List<Path> removed = new ArrayList<>();
        for (DirectoryNames.Entry entry : held) {
            Path temp = directory.resolve(entry.name());
            if (removeIfAbandoned(temp)) {
                removed.add(temp);
            }
        }
        return removed;
    }

    /** Whether {@code path} names the file open at {@code fd}. */
    private static boolean sameFile(Path path, int fd) {
        try {
            Object atPath = Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS)
                    .fileKey();
            Object open = Files.readAttributes(Path.of("/proc/self/fd/" + fd), BasicFileAttributes.class)
                    .fileKey();
            return atPath != null && atPath.equals(open);
        } catch (IOException e) {
            return false; // the path is gone, or holds something else
        }
    }

    /** A flushed temporary file that becomes {@code target}, or is discarded; {@code lock} holds its flock. */
    public static final class Prepared {

        private final Path temp;
        private final Path target;
        private final int lock;

        private Prepared(Path temp, Path target, int lock) {
            this.temp = temp;
            this.target = target;
            this.lock = lock;
        }

        /** Renames the temporary file over the target and flushes the directory, which makes the rename durable. */
        public void publish() {
            try {
                Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                Libc.close(lock);
                syncDirectory(target.getParent());
            } catch (IOException e) {
                discard();
                throw StorageException.io(e, "cannot write %s", target);
            }
        }

        /** Removes the temporary file; the target stays as it was. */
        public void discard() {
            giveUp(temp, lock);
        }
    }

    /** Where this thread writes {@code target}'s next content before renaming it into place. */
    public static Path tempPath(Path target) {
        return target.resolveSibling(target.getFileName() + "."
                + ProcessHandle.current().pid() + "-" + Thread.currentThread().threadId() + HELD_SUFFIX);
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
