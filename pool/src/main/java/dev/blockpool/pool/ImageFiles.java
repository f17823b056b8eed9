package dev.blockpool.pool;

import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.StorageException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Image files: create (sparse or preallocated), grow, and copy for snapshots, restores and
 * clones. A copy is a reflink (FICLONE, through {@code cp --reflink=always}) where the pool's
 * filesystem shares extents (XFS with reflink, btrfs), otherwise a sparse-aware copy that keeps
 * holes as holes.
 */
public final class ImageFiles {

    /** Which path a copy took; tests and logs use it to prove the cheap path was taken. */
    public enum CopyMethod { REFLINK, SPARSE_COPY }

    private static final Logger log = LoggerFactory.getLogger(ImageFiles.class);
    /** A sparse copy of a large, mostly-written image can take a while; a reflink takes milliseconds. */
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
            runChecked(List.of("fallocate", "--length", Long.toString(sizeBytes),
                    image.toString()));
        }
        DurableFiles.fsync(image);
    }

    public CopyMethod copy(Path source, Path target) {
        if (!Files.isRegularFile(source)) {
            throw StorageException.internal("source image %s is missing", source);
        }
        CommandRunner.Result reflink = commands.run(COPY_TIMEOUT,
                List.of("cp", "--reflink=always", "--", source.toString(), target.toString()));
        CopyMethod method = CopyMethod.REFLINK;
        if (!reflink.ok()) {
            log.debug("reflink of {} not possible ({}), copying sparsely", source, reflink.stderr().strip());
            runChecked(List.of("cp", "--reflink=never", "--sparse=always", "--",
                    source.toString(), target.toString()));
            method = CopyMethod.SPARSE_COPY;
        }
        DurableFiles.fsync(target);
        return method;
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

    public static long size(Path image) {
        try {
            return Files.size(image);
        } catch (IOException e) {
            throw StorageException.io(e, "cannot read the size of image %s", image);
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
