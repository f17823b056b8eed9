package dev.blockpool.host;

import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.util.Optional;

/**
 * What is at a path, seen without following a symlink in its last name (lstat), including the
 * states a broken mount shows: stat(2) failing with ENOTCONN, ESTALE or EIO means something is
 * mounted there whose backing has gone away.
 */
public sealed interface PathState {

    record Missing() implements PathState {
    }

    record Directory() implements PathState {
    }

    /** A regular file, or a device node (what a raw block publish binds, and shows once bound). */
    record File(Optional<DeviceNumber> deviceNode, long size) implements PathState {
        public boolean isEmptyRegularFile() {
            return deviceNode.isEmpty() && size == 0;
        }
    }

    /** A symlink: never followed, never made by the driver. */
    record Symlink() implements PathState {
    }

    /** A fifo or a socket: never made by the driver. */
    record Special() implements PathState {
    }

    record Broken(String reason) implements PathState {
    }

    static PathState of(Path path) {
        try {
            PosixFileAttributes attributes = Files.readAttributes(path, PosixFileAttributes.class,
                    LinkOption.NOFOLLOW_LINKS);
            if (attributes.isDirectory()) {
                return new Directory();
            }
            if (attributes.isSymbolicLink()) {
                return new Symlink();
            }
            if (attributes.isRegularFile()) {
                return new File(Optional.empty(), attributes.size());
            }
            int type = (Integer) Files.getAttribute(path, "unix:mode", LinkOption.NOFOLLOW_LINKS) & 0170000;
            if (type == 0060000 || type == 0020000) { // S_IFBLK, S_IFCHR
                long rdev = (Long) Files.getAttribute(path, "unix:rdev", LinkOption.NOFOLLOW_LINKS);
                return new File(Optional.of(DeviceNumber.fromDevT(rdev)), 0);
            }
            return new Special();
        } catch (NoSuchFileException e) {
            return new Missing();
        } catch (FileSystemException e) {
            return new Broken(Optional.ofNullable(e.getReason()).orElse(e.getMessage()));
        } catch (IOException e) {
            return new Broken(e.getMessage());
        }
    }
}
