package dev.blockpool.host.mounts;

import java.nio.file.Path;
import java.util.List;

/**
 * One line of {@code /proc/self/mountinfo}: where something is mounted, what it is, and the
 * device ({@code major:minor}) behind it. For a bind mount, {@code root} is the directory (or
 * device node) inside the source filesystem that was bound.
 */
public record MountInfo(
        int mountId,
        int parentId,
        DeviceNumber device,
        String root,
        Path mountPoint,
        List<String> mountOptions,
        List<String> optionalFields,
        String fsType,
        String source,
        List<String> superOptions) {

    public MountInfo {
        mountOptions = List.copyOf(mountOptions);
        optionalFields = List.copyOf(optionalFields);
        superOptions = List.copyOf(superOptions);
    }

    /** Read-only as mounted here (the per-mount flag, which is what a bind remount changes). */
    public boolean readOnly() {
        return mountOptions.contains("ro");
    }
}
