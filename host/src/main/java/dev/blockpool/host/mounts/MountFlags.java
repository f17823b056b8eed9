package dev.blockpool.host.mounts;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The allow-listed mount options as mount(2) takes them: per-mount and superblock flags, and the
 * rest as the filesystem's data string. What mount(8) would do with the same options.
 */
record MountFlags(long flags, String data) {

    private static final Map<String, Long> FLAGS = Map.ofEntries(
            Map.entry("ro", MountSyscalls.MS_RDONLY),
            Map.entry("rw", 0L),
            Map.entry("nosuid", MountSyscalls.MS_NOSUID),
            Map.entry("nodev", MountSyscalls.MS_NODEV),
            Map.entry("noexec", MountSyscalls.MS_NOEXEC),
            Map.entry("sync", MountSyscalls.MS_SYNCHRONOUS),
            Map.entry("async", 0L),
            Map.entry("dirsync", MountSyscalls.MS_DIRSYNC),
            Map.entry("noatime", MountSyscalls.MS_NOATIME),
            Map.entry("nodiratime", MountSyscalls.MS_NODIRATIME),
            Map.entry("relatime", MountSyscalls.MS_RELATIME),
            Map.entry("strictatime", MountSyscalls.MS_STRICTATIME),
            Map.entry("lazytime", MountSyscalls.MS_LAZYTIME),
            Map.entry("defaults", 0L));

    /** Options already checked against the allow-list; anything that is not a flag goes to the filesystem. */
    static MountFlags of(List<String> options) {
        long flags = 0;
        List<String> data = new ArrayList<>();
        for (String option : options) {
            Long flag = FLAGS.get(option);
            if (flag != null) {
                flags |= flag;
            } else {
                data.add(option);
            }
        }
        return new MountFlags(flags, data.isEmpty() ? null : String.join(",", data));
    }
}
