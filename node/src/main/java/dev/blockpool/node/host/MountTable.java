package dev.blockpool.node.host;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * The live mount table. Every idempotency decision of the node service is taken against it,
 * never against memory, so a restarted driver sees exactly what the host has.
 */
public interface MountTable {

    List<MountInfo> mounts();

    /** The topmost mount at {@code mountPoint} (the last one listed wins when mounts are stacked). */
    default Optional<MountInfo> at(Path mountPoint) {
        Path wanted = mountPoint.toAbsolutePath().normalize();
        MountInfo found = null;
        for (MountInfo mount : mounts()) {
            if (mount.mountPoint().equals(wanted)) {
                found = mount;
            }
        }
        return Optional.ofNullable(found);
    }

    /** Every mount of the filesystem on {@code device}. */
    default List<MountInfo> ofDevice(DeviceNumber device) {
        return mounts().stream().filter(m -> m.device().equals(device)).toList();
    }
}
