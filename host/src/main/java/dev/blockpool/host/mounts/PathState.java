package dev.blockpool.host.mounts;

import dev.blockpool.common.Libc;
import java.nio.file.Path;
import java.util.Optional;

/**
 * What is at a path, seen without following a symlink in its last name (lstat), including the
 * states a broken mount shows: stat(2) failing with ENOTCONN, ESTALE or EIO means something is
 * mounted there whose backing has gone away.
 */
public sealed interface PathState {

    record Missing() implements PathState {}

    record Directory() implements PathState {}

    /** A regular file, or a device node (what a raw block publish binds, and shows once bound). */
    record File(Optional<DeviceNumber> deviceNode, long size) implements PathState {
        public boolean isEmptyRegularFile() {
            return deviceNode.isEmpty() && size == 0;
        }
    }

    /** A symlink: never followed, never made by the driver. */
    record Symlink() implements PathState {}

    /** A fifo or a socket: never made by the driver. */
    record Special() implements PathState {}

    record Broken(String reason) implements PathState {}

    static PathState of(Path path) {
        Libc.Stat stat;
        try {
            stat = Libc.lstat(path.toString());
        } catch (Libc.ErrnoException e) {
            return e.errno() == Libc.ENOENT ? new Missing() : new Broken(e.getMessage());
        }
        return switch (stat.mode() & Libc.S_IFMT) {
            case Libc.S_IFDIR -> new Directory();
            case Libc.S_IFLNK -> new Symlink();
            case Libc.S_IFREG -> new File(Optional.empty(), stat.size());
            case Libc.S_IFBLK, Libc.S_IFCHR ->
                new File(Optional.of(new DeviceNumber(stat.rdevMajor(), stat.rdevMinor())), 0);
            default -> new Special();
        };
    }
}
