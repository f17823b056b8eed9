package dev.blockpool.pool;

import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Image files: create (sparse or preallocated), grow, and copy for snapshots, restores and
 * clones. A copy is a reflink where the pool's filesystem shares extents (XFS with reflink,
 * btrfs): the FICLONE ioctl through {@link Libc}, which copies no data, so it takes milliseconds
 * however large the image. Otherwise it is a sparse-aware copy by {@code cp} that keeps holes
 * as holes.
 *
 * <p>None of these makes the image durable: the caller flushes it once, when it is complete
 * (after a copy and a grow, say), before the record that relies on it is put in place.
 */
public final class ImageFiles {

    /** Which path a copy took; tests and logs use it to prove the cheap path was taken. */
    public enum CopyMethod {
        REFLINK,
        SPARSE_COPY
    }

    /** Every program this class runs: a controller is ready only where all of them are found. */
    public static final List<String> TOOLS = List.of("cp", "fallocate");

    private static final Logger log = LoggerFactory.getLogger(ImageFiles.class);
    /** ioctl(dest_fd, FICLONE, src_fd) (linux/fs.h): dest shares all of src's extents (a reflink). */
    private static final Libc.Ioctl FICLONE = new Libc.Ioctl("FICLONE", 0x40049409L);
    /**
     * FICLONE's answers that mean "no shared extents here": the filesystem cannot (EOPNOTSUPP,
     * ENOTTY, EINVAL) or not across these two files (EXDEV). Any other errno is a real failure.
     */
    private static final Set<Integer> NO_REFLINK = Set.of(Libc.EOPNOTSUPP, Libc.ENOTTY, Libc.EINVAL, Libc.EXDEV);
    /** A sparse copy of a large, mostly-written image can take a while. */
    private static final Duration COPY_TIMEOUT = Duration.ofHours(1);

    private final CommandRunner commands;

    public ImageFiles(CommandRunner commands) {
        this.commands = commands;
    }

    public void create(Path image, long sizeBytes, Allocation allocation) {
        try {
            Files.deleteIfExists(image);
            Files.createFile(image);
        } catch (IOException e) {
            throw StorageException.io(e, "cannot create image %s", image);
        }
        grow(image, sizeBytes, allocation);
    }

    /** Grows the image to {@code sizeBytes}; the new tail is a hole unless preallocated. */
    public void grow(Path image, long sizeBytes, Allocation allocation) {
        setLength(image, sizeBytes);
        if (allocation == Allocation.PREALLOCATED) {
            runChecked(List.of("fallocate", "--length", Long.toString(sizeBytes), image.toString()));
        }
    }

    /**
     * Copies {@code source} to {@code target} (replacing it): a reflink where the pool's
     * filesystem can share the extents, else a sparse-aware copy.
     */
    public CopyMethod copy(Path source, Path target) {
        if (!Files.isRegularFile(source)) {
            throw StorageException.internal("source image %s is missing", source);
        }
        if (reflink(source, target)) {
            return CopyMethod.REFLINK;
        }
        runChecked(List.of("cp", "--reflink=never", "--sparse=always", "--", source.toString(), target.toString()));
        return CopyMethod.SPARSE_COPY;
    }

    /**
     * FICLONE of {@code source} into {@code target}; false (leaving {@code target} empty) where
     * the filesystem shares no extents (ext4, tmpfs) or not between these two files.
     */
    private static boolean reflink(Path source, Path target) {
        int from = open(source, Libc.O_RDONLY);
        try {
            int to = open(target, Libc.O_WRONLY | Libc.O_CREAT | Libc.O_TRUNC);
            try {
                try {
                    Libc.ioctl(to, FICLONE, from);
                } catch (Libc.ErrnoException e) {
                    if (NO_REFLINK.contains(e.errno())) {
                        log.debug("reflink of {} not possible ({}), copying sparsely", source, e.getMessage());
                        return false;
                    }
                    throw StorageException.io(e, "cannot reflink %s to %s", source, target);
                }
                return true;
            } finally {
                Libc.close(to);
            }
        } finally {
            Libc.close(from);
        }
    }

    private static int open(Path image, int flags) {
        try {
            return Libc.open(image.toString(), flags | Libc.O_NOFOLLOW, 0666);
        } catch (Libc.ErrnoException e) {
            throw StorageException.io(e, "cannot open image %s", image);
        }
    }

    /** Runs a command that writes into the pool; a full pool (or quota) is EXHAUSTED, not INTERNAL. */
    private void runChecked(List<String> command) {
        CommandRunner.Result result = commands.run(COPY_TIMEOUT, command);
        if (!result.ok()) {
            if (StorageException.isNoSpace(result.stderr())) {
                throw StorageException.noSpace("the pool is full: %s", result.describe());
            }
            throw StorageException.internal("%s", result.describe());
        }
    }

    private static void setLength(Path image, long sizeBytes) {
        try (RandomAccessFile file = new RandomAccessFile(image.toFile(), "rw")) {
            file.setLength(sizeBytes);
        } catch (IOException e) {
            throw StorageException.io(e, "cannot size image %s to %d bytes", image, sizeBytes);
        }
    }
}
