package dev.blockpool.host.mounts;

import dev.blockpool.common.StorageException;
import java.io.IOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the node makes at the paths kubelet gives it, and removes again: a directory for a
 * filesystem, an empty regular file for a device node's bind. Nothing else is made, and
 * nothing else is ever removed: not a symlink, a device node, a fifo or a socket, not a file
 * with content.
 */
public final class MountPoints {

    private static final Logger log = LoggerFactory.getLogger(MountPoints.class);

    private MountPoints() {}

    /**
     * The directory a filesystem is mounted on; an existing empty directory is reused. A mount
     * over a directory with content would hide it, so that is refused.
     */
    public static void createDirectory(Path path) {
        PathState state = PathState.of(path);
        if (state instanceof PathState.Directory) {
            try (DirectoryStream<Path> entries = Files.newDirectoryStream(path)) {
                if (entries.iterator().hasNext()) {
                    throw StorageException.precondition(
                            "%s is not empty; a volume is mounted only on an empty " + "directory, never over content",
                            path);
                }
            } catch (IOException e) {
                throw StorageException.io(e, "cannot look into %s", path);
            }
            return;
        }
        if (!(state instanceof PathState.Missing)) {
            throw StorageException.precondition(
                    "%s exists and is not a directory (%s); nothing is mounted over it", path, describe(state));
        }
        try {
            Files.createDirectories(path);
        } catch (IOException e) {
            throw StorageException.io(e, "cannot create the directory %s", path);
        }
    }

    /** The file a raw block device node is bound onto; an existing empty regular file is reused. */
    public static void createFile(Path path) {
        PathState state = PathState.of(path);
        if (state instanceof PathState.File file && file.isEmptyRegularFile()) {
            return;
        }
        if (!(state instanceof PathState.Missing)) {
            throw StorageException.precondition(
                    "%s exists and is %s; a block volume is published onto an empty file "
                            + "the driver makes, never over anything else",
                    path, describe(state));
        }
        try {
            Files.createDirectories(path.getParent());
            Files.createFile(path);
        } catch (FileAlreadyExistsException e) {
            // made since it was looked at: judged as if it had been there
            if (!(PathState.of(path) instanceof PathState.File file && file.isEmptyRegularFile())) {
                throw StorageException.precondition(
                        "%s appeared while the block volume was being published onto it; it is left as it is", path);
            }
        } catch (IOException e) {
            throw StorageException.io(e, "cannot create the file %s", path);
        }
    }

    /**
     * Removes what a publish made at an unmounted target: an empty directory or an empty regular
     * file. A directory with content is kept and FAILED_PRECONDITION (something wrote into the
     * directory itself; an operator must look). Anything the driver never makes there (a symlink,
     * a device node, a fifo, a socket, a file with content) is left as it is and the unpublish
     * succeeds: the volume is not published at that path, and the spec asks NodeUnpublish to be
     * idempotent and to remove only what the plugin created.
     */
    public static void removeUnmounted(Path target) {
        PathState state = PathState.of(target);
        boolean ours = state instanceof PathState.Directory
                || state instanceof PathState.File file && file.isEmptyRegularFile();
        if (state instanceof PathState.Missing) {
            return;
        }
        if (!ours) {
            log.warn("{} is {}, which the driver never makes; it is left in place", target, describe(state));
            return;
        }
        try {
            Files.delete(target);
        } catch (DirectoryNotEmptyException e) {
            throw StorageException.precondition(
                    "%s is unmounted but not empty: something wrote into the directory itself; it is kept", target);
        } catch (IOException e) {
            throw StorageException.io(e, "cannot remove %s", target);
        }
    }

    /** A repeated call must ask for what is mounted: CONFLICT when read-only differs. */
    public static void requireSameReadOnly(MountInfo mount, boolean readOnly, Path path) {
        if (mount.readOnly() != readOnly) {
            throw StorageException.conflict(
                    "the volume is mounted at %s %s, not %s as requested",
                    path, mount.readOnly() ? "read-only" : "read-write", readOnly ? "read-only" : "read-write");
        }
    }

    private static String describe(PathState state) {
        return switch (state) {
            case PathState.Missing m -> "missing";
            case PathState.Directory d -> "a directory";
            case PathState.File f when f.deviceNode().isPresent() -> "a device node";
            case PathState.File f -> f.size() == 0 ? "an empty file" : "a file with content";
            case PathState.Symlink s -> "a symlink";
            case PathState.Special s -> "a fifo or socket";
            case PathState.Broken b -> "unreadable (" + b.reason() + ")";
        };
    }
}
