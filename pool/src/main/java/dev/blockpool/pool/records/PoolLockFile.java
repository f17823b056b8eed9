package dev.blockpool.pool.records;

import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An exclusive flock(2) on a file in the pool, seen by every process that shares the pool, on
 * this host or another (NFS and GlusterFS carry flock to their servers). It is released by
 * {@link #close()}, and by the kernel when the process dies, however it dies.
 */
public final class PoolLockFile implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(PoolLockFile.class);
    private static final Duration FIRST_PAUSE = Duration.ofMillis(1);
    private static final Duration LONGEST_PAUSE = Duration.ofMillis(50);

    private final int fd;

    private PoolLockFile(int fd) {
        this.fd = fd;
    }

    /** The lock, or empty while another holder has it (another process, or another descriptor of this one). */
    public static Optional<PoolLockFile> tryTake(Path file) {
        int fd;
        try {
            fd = Libc.open(file.toString(), Libc.O_RDWR | Libc.O_CREAT | Libc.O_NOFOLLOW, 0644);
        } catch (Libc.ErrnoException e) {
            throw StorageException.io(e, "cannot open the lock file %s", file);
        }
        try {
            Flock.tryLockExclusive(fd);
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

    /**
     * {@link #tryTake}, and on success notes who holds it in the file ("pid P on host H since T"),
     * only to name the holder in the messages of those that find it taken: the lock is what counts.
     */
    public static Optional<PoolLockFile> tryTakeNoted(Path file, Clock clock) {
        Optional<PoolLockFile> lock = tryTake(file);
        if (lock.isPresent()) {
            String self =
                    "pid " + ProcessHandle.current().pid() + " on host " + hostName() + " since " + clock.instant();
            try {
                Files.writeString(file, self);
            } catch (IOException e) {
                log.warn("cannot note this process in {}: {}", file, e.getMessage());
            }
        }
        return lock;
    }

    /** Who holds the lock, as its holder noted it. */
    public static String holder(Path file) {
        try {
            String noted = Files.readString(file).strip();
            return noted.isEmpty() ? "holder unknown" : noted;
        } catch (IOException e) {
            return "holder unknown";
        }
    }

    private static String hostName() {
        try {
            return Files.readString(Path.of("/proc/sys/kernel/hostname")).strip();
        } catch (IOException e) {
            return "unknown";
        }
    }

    @Override
    public void close() {
        Libc.close(fd);
    }
}
