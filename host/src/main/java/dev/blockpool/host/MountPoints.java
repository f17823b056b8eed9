package dev.blockpool.host;

import dev.blockpool.common.StorageException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** What the node makes at the paths kubelet gives it, and the checks of what is already mounted there. */
final class MountPoints {

    private MountPoints() {
    }

    /** The directory a filesystem is mounted on. */
    static void createDirectory(Path path) {
        try {
            Files.createDirectories(path);
        } catch (IOException e) {
            throw StorageException.io(e, "cannot create the directory %s", path);
        }
    }

    /** The file a raw block device node is bound onto; an existing file is reused. */
    static void createFile(Path path) {
        PathState state = PathState.of(path);
        if (state instanceof PathState.File) {
            return;
        }
        if (!(state instanceof PathState.Missing)) {
            throw StorageException.conflict("%s exists and is not a file; a block volume is published onto a file",
                    path);
        }
        try {
            Files.createDirectories(path.getParent());
            Files.createFile(path);
        } catch (IOException e) {
            throw StorageException.io(e, "cannot create the file %s", path);
        }
    }

    /** A repeated call must ask for what is mounted: CONFLICT when read-only differs. */
    static void requireSameReadOnly(MountInfo mount, boolean readOnly, Path path) {
        if (mount.readOnly() != readOnly) {
            throw StorageException.conflict("the volume is mounted at %s %s, not %s as requested", path,
                    mount.readOnly() ? "read-only" : "read-write", readOnly ? "read-only" : "read-write");
        }
    }
}
