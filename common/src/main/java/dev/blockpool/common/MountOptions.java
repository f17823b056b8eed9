package dev.blockpool.common;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

/**
 * The mount flags a request may ask for. Anything outside this allow-list is refused with
 * INVALID: a flag reaches mount(2), so it must never be able to change what is
 * mounted where (bind, remount, loop, offset, ...), nor make a volume unsafe to write
 * (norecovery, noload: a filesystem mounted without replaying its journal) or take the node
 * down (errors=panic).
 */
public final class MountOptions {

    private static final Set<String> COMMON = Set.of(
            "ro",
            "rw",
            "defaults",
            "noatime",
            "nodiratime",
            "relatime",
            "strictatime",
            "lazytime",
            "nodev",
            "nosuid",
            "noexec",
            "sync",
            "async",
            "dirsync",
            "discard",
            "nodiscard");
    private static final Set<String> EXT4 = Set.of(
            "errors=remount-ro",
            "errors=continue",
            "data=ordered",
            "data=journal",
            "data=writeback",
            "nodelalloc",
            "delalloc");
    private static final Set<String> XFS = Set.of("nouuid", "inode64", "inode32", "largeio", "nolargeio");
    /** The per-mount flags a bind remount can set; the others belong to the filesystem, set at stage. */
    private static final Set<String> BIND =
            Set.of("nodev", "nosuid", "noexec", "noatime", "nodiratime", "relatime", "strictatime");

    private MountOptions() {}

    /**
     * Splits comma-joined flags, drops empty ones and "defaults", and refuses any flag that no
     * supported filesystem allows; whether it suits the volume's filesystem is checked by
     * {@link #requireAllowedFor} once that is known.
     */
    public static List<String> parse(List<String> flags) {
        List<String> out = new ArrayList<>();
        for (String flag : flags) {
            for (String option : flag.split(",")) {
                String o = option.strip();
                if (o.isEmpty()) {
                    continue;
                }
                if (!COMMON.contains(o) && !EXT4.contains(o) && !XFS.contains(o)) {
                    throw StorageException.invalid(
                            "mount flag \"%s\" is not allowed; allowed: %s",
                            o, sorted(Stream.of(COMMON, EXT4, XFS).flatMap(Set::stream)));
                }
                if (!out.contains(o) && !o.equals("defaults")) {
                    out.add(o);
                }
            }
        }
        if (out.contains("ro") && out.contains("rw")) {
            throw StorageException.invalid("mount flags ask for both ro and rw");
        }
        return List.copyOf(out);
    }

    /** INVALID when a flag belongs to another filesystem than {@code type}. */
    public static void requireAllowedFor(List<String> options, FsType type) {
        Set<String> specific = type == FsType.EXT4 ? EXT4 : XFS;
        for (String o : options) {
            if (!COMMON.contains(o) && !specific.contains(o)) {
                throw StorageException.invalid(
                        "mount flag \"%s\" is not allowed for %s; allowed: %s",
                        o, type, sorted(Stream.concat(COMMON.stream(), specific.stream())));
            }
        }
    }

    /** The flags a bind mount of a staged filesystem takes (read-only is passed on its own). */
    public static List<String> forBind(List<String> options) {
        return options.stream().filter(BIND::contains).toList();
    }

    private static List<String> sorted(Stream<String> flags) {
        return flags.sorted().toList();
    }
}
