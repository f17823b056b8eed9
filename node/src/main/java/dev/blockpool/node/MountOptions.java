package dev.blockpool.node;

import dev.blockpool.common.CsiException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The mount flags a request may ask for. Anything outside this allow-list is refused with
 * INVALID_ARGUMENT: a flag reaches mount(8), so it must never be able to change what is
 * mounted where (bind, remount, loop, offset, ...).
 */
public final class MountOptions {

    private static final Set<String> COMMON = Set.of("ro", "rw", "defaults", "noatime", "nodiratime", "relatime",
            "strictatime", "lazytime", "nodev", "nosuid", "noexec", "sync", "async", "dirsync", "discard",
            "nodiscard");
    private static final Set<String> EXT4 = Set.of("errors=remount-ro", "errors=continue", "errors=panic",
            "data=ordered", "data=journal", "data=writeback", "nodelalloc", "delalloc", "noload");
    private static final Set<String> XFS = Set.of("nouuid", "inode64", "inode32", "largeio", "nolargeio",
            "norecovery");

    private MountOptions() {
    }

    /** Splits comma-joined flags, drops empty ones, and checks each against the allow-list. */
    public static List<String> validate(List<String> flags, String fsType) {
        List<String> out = new ArrayList<>();
        for (String flag : flags) {
            for (String option : flag.split(",")) {
                String o = option.strip();
                if (o.isEmpty()) {
                    continue;
                }
                boolean allowed = COMMON.contains(o)
                        || ("ext4".equals(fsType) && EXT4.contains(o))
                        || ("xfs".equals(fsType) && XFS.contains(o));
                if (!allowed) {
                    throw CsiException.invalidArgument(
                            "mount flag \"%s\" is not allowed for %s; allowed: %s", o,
                            fsType.isEmpty() ? "this volume" : fsType, allowedFor(fsType));
                }
                if (!out.contains(o) && !o.equals("defaults")) {
                    out.add(o);
                }
            }
        }
        if (out.contains("ro") && out.contains("rw")) {
            throw CsiException.invalidArgument("mount flags ask for both ro and rw");
        }
        return List.copyOf(out);
    }

    private static List<String> allowedFor(String fsType) {
        List<String> all = new ArrayList<>(COMMON);
        if ("ext4".equals(fsType)) {
            all.addAll(EXT4);
        } else if ("xfs".equals(fsType)) {
            all.addAll(XFS);
        }
        return all.stream().sorted().toList();
    }
}
