package dev.blockpool.host;

import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Optional;

/**
 * What is at a path, including the states a broken mount shows: stat(2) failing with ENOTCONN,
 * ESTALE or EIO means something is mounted there whose backing has gone away.
 */
public sealed interface PathState {

    record Missing() implements PathState {
    }

    record Directory() implements PathState {
    }

    /** A regular file or a device node (the target of a raw block publish). */
    record File(Optional<DeviceNumber> deviceNode) implements PathState {
    }

    record Broken(String reason) implements PathState {
    }

    static PathState of(Path path) {
        try {
            BasicFileAttributes attributes = Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            if (attributes.isDirectory()) {
                return new Directory();
            }
            Optional<DeviceNumber> rdev = Optional.empty();
            if (attributes.isOther()) {
                rdev = Optional.of(DeviceNumber.fromDevT((Long) Files.getAttribute(path, "unix:rdev")));
            }
            return new File(rdev);
        } catch (NoSuchFileException e) {
            return new Missing();
        } catch (FileSystemException e) {
            return new Broken(Optional.ofNullable(e.getReason()).orElse(e.getMessage()));
        } catch (IOException e) {
            return new Broken(e.getMessage());
        }
    }
}
