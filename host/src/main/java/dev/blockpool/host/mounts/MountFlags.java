package dev.blockpool.host.mounts;

import dev.blockpool.common.Libc;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The allow-listed mount options as mount(2) takes them: per-mount and superblock flags, and the
 * rest as the filesystem's data string. What mount(8) would do with the same options.
 */
record MountFlags(long flags, String data) {

    private static final Map<String, Long> FLAGS = Map.ofEntries(
            Map.entry("ro", Libc.MS_RDONLY),
            Map.entry("rw", 0L),
            Map.entry("nosuid", Libc.MS_NOSUID),
            Map.entry("nodev", Libc.MS_NODEV),
            Map.entry("noexec", Libc.MS_NOEXEC),
            Map.entry("sync", Libc.MS_SYNCHRONOUS),
            Map.entry("async", 0L),
            Map.entry("dirsync", Libc.MS_DIRSYNC),
            Map.entry("noatime", Libc.MS_NOATIME),
            Map.entry("nodiratime", Libc.MS_NODIRATIME),
            Map.entry("relatime", Libc.MS_RELATIME),
            Map.entry("strictatime", Libc.MS_STRICTATIME),
            Map.entry("lazytime", Libc.MS_LAZYTIME),
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
