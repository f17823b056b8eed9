package dev.blockpool.pool;

import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

/**
 * An exclusive flock(2) on a file in the pool, seen by every process that shares the pool, on
 * this host or another (NFS and GlusterFS carry flock to their servers). It is released by
 * {@link #close()}, and by the kernel when the process dies, however it dies.
 */
final class PoolLockFile implements AutoCloseable {

    private static final Duration FIRST_PAUSE = Duration.ofMillis(1);
    private static final Duration LONGEST_PAUSE = Duration.ofMillis(50);

    private final int fd;

    private PoolLockFile(int fd) {
        this.fd = fd;
    }

    /** The lock, or empty while another holder has it (another process, or another descriptor of this one). */
    static Optional<PoolLockFile> tryTake(Path file) {
        int fd;
        try {
            fd = Libc.open(file.toString(), Libc.O_RDWR | Libc.O_CREAT | Libc.O_NOFOLLOW, 0644);
        } catch (Libc.ErrnoException e) {
            throw StorageException.io(e, "cannot open the lock file %s", file);
        }
        try {
            Libc.flock(fd, Libc.LOCK_EX | Libc.LOCK_NB);
            return Optional.of(new PoolLockFile(fd));
        } catch (Libc.ErrnoException e) {
            Libc.close(fd);
            if (e.errno() == Libc.EWOULDBLOCK) {
                return Optional.empty();
            }
            throw StorageException.io(e, "cannot lock %s", file);
        }
    }

    /**
     * Waits for the lock, at most {@code patience}, then fails as BUSY. It asks again after pauses
     * that grow rather than blocking in flock, which would hold a virtual thread's carrier.
     */
    static PoolLockFile take(Path file, Duration patience) {
        long deadline = System.nanoTime() + patience.toNanos();
        Duration pause = FIRST_PAUSE;
        while (true) {
            Optional<PoolLockFile> lock = tryTake(file);
            if (lock.isPresent()) {
                return lock.get();
            }
            if (System.nanoTime() > deadline) {
                throw StorageException.busy(
                        "the pool's lock %s has been held elsewhere for over %d s; retry later",
                        file, patience.toSeconds());
            }
            try {
                Thread.sleep(pause);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw StorageException.busy("interrupted while waiting for the pool's lock %s", file);
            }
            pause = pause.multipliedBy(2).compareTo(LONGEST_PAUSE) > 0 ? LONGEST_PAUSE : pause.multipliedBy(2);
        }
    }

    @Override
    public void close() {
        Libc.close(fd);
    }
}
