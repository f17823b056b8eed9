package dev.blockpool.host.mounts;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * The live mount table. Every idempotency decision of the node service is taken against it,
 * never against memory, so a restarted driver sees exactly what the host has.
 */
public interface MountTable {

    List<MountInfo> mounts();

    /** The topmost mount at {@code mountPoint} (the last one listed wins when mounts are stacked). */
    default Optional<MountInfo> at(Path mountPoint) {
        return topmost(allAt(mountPoint), mountPoint);
    }

    /**
     * Every mount at any of the {@code mountPoints}, in the table's order (the topmost at each
     * last): one read of the table for all of them.
     */
    default List<MountInfo> allAt(Path... mountPoints) {
        List<Path> wanted =
                Stream.of(mountPoints).map(p -> p.toAbsolutePath().normalize()).toList();
        return mounts().stream().filter(m -> wanted.contains(m.mountPoint())).toList();
    }

    /** The topmost of {@code mounts} at {@code mountPoint}. */
    static Optional<MountInfo> topmost(List<MountInfo> mounts, Path mountPoint) {
        Path wanted = mountPoint.toAbsolutePath().normalize();
        return mounts.stream().filter(m -> m.mountPoint().equals(wanted)).reduce((below, above) -> above);
    }

    /**
     * The path as the mount table shows it: the kernel records mount points with symlinks
     * resolved, so the parent directory is resolved (when it exists) and the last name appended.
     * The last name itself is not followed: it is the mount point, which may be a broken mount.
     */
    static Path asListed(Path path) {
        Path parent = path.getParent();
        Path last = path.getFileName();
        if (parent != null
                && last != null
                && !last.toString().equals(".")
                && !last.toString().equals("..")) {
            try {
                return parent.toRealPath().resolve(last);
            } catch (IOException | SecurityException e) {
                // the parent does not exist (yet): nothing can be mounted at the path
            }
        }
        return path.normalize();
    }

    /** Every mount of the filesystem on {@code device}. */
    default List<MountInfo> ofDevice(DeviceNumber device) {
        return mounts().stream().filter(m -> m.device().equals(device)).toList();
    }
}
