package dev.blockpool.pool.transfer;

import dev.blockpool.common.StorageException;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.UUID;

/**
 * One pull of a volume's image at a time on a pool, across every process that pulls into it: the
 * driver and any {@code blockpool-csi move} beside it (one left running by a cut exec, say), whose
 * writes and progress records would otherwise interleave in the same image. A pull holds one byte
 * of {@code incoming/.pulls.lock}, at a place given by its volume ID, with a POSIX record lock: the
 * kernel drops it with the process, so a killed pull never holds it. One file for every volume,
 * never removed (no race between a remover and a locker; the reconcile skips dot files), and one
 * channel on it per process, since closing any channel on a file drops the process's locks on it.
 */
final class PullLocks implements AutoCloseable {

    static final String FILE = ".pulls.lock";

    private final Path file;
    private FileChannel channel;

    PullLocks(Path incomingDirectory) {
        this.file = incomingDirectory.resolve(FILE);
    }

    /** The volume's lock, held until closed; BUSY when another pull of the volume holds it. */
    synchronized FileLock lock(String volumeId) {
        try {
            if (channel == null) {
                channel = FileChannel.open(
                        file, StandardOpenOption.CREATE, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);
            }
            FileLock lock = channel.tryLock(position(volumeId), 1, false);
            if (lock != null) {
                return lock;
            }
        } catch (OverlappingFileLockException e) {
            // held by another pull of this process
        } catch (IOException e) {
            throw StorageException.io(e, "cannot lock %s", file);
        }
        throw StorageException.busy(
                "another pull of volume %s into this pool is under way (the driver's, or another blockpool-csi move's):"
                        + " run this again once it ends",
                volumeId);
    }

    /** A place in the file for the volume: 62 bits of a hash of its ID, so that two volumes' do not meet. */
    static long position(String volumeId) {
        return UUID.nameUUIDFromBytes(volumeId.getBytes(StandardCharsets.UTF_8)).getMostSignificantBits() >>> 2;
    }

    @Override
    public synchronized void close() throws IOException {
        if (channel != null) {
            channel.close();
        }
    }
}
