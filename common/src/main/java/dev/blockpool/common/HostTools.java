package dev.blockpool.common;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The programs the driver runs on a host, which package brings each, and whether this host has
 * them. A request that needs a program the host lacks is refused as a PRECONDITION that names
 * the program and its package, rather than failing inside a command that cannot start.
 */
public final class HostTools {

    /** A program and the packages that install it on Debian and on RHEL. */
    public record Tool(String program, String debianPackage, String rhelPackage) {

        /** "`mkfs.xfs` is not installed (Debian: xfsprogs, RHEL: xfsprogs)". */
        public String notInstalled() {
            return "`" + program + "` is not installed (Debian: " + debianPackage + ", RHEL: " + rhelPackage + ")";
        }
    }

    private static final Map<String, Tool> KNOWN = Stream.of(
                    new Tool("mkfs.ext4", "e2fsprogs", "e2fsprogs"),
                    new Tool("e2fsck", "e2fsprogs", "e2fsprogs"),
                    new Tool("resize2fs", "e2fsprogs", "e2fsprogs"),
                    new Tool("mkfs.xfs", "xfsprogs", "xfsprogs"),
                    new Tool("xfs_growfs", "xfsprogs", "xfsprogs"),
                    new Tool("blkid", "util-linux", "util-linux"),
                    new Tool("losetup", "util-linux", "util-linux"),
                    new Tool("fallocate", "util-linux", "util-linux"),
                    new Tool("cp", "coreutils", "coreutils"))
            .collect(Collectors.toUnmodifiableMap(Tool::program, tool -> tool));

    private final List<Path> searchPath;

    public HostTools(List<Path> searchPath) {
        this.searchPath = List.copyOf(searchPath);
    }

    /** Searches the directories of {@code $PATH} plus the sbin directories root tools live in. */
    public static HostTools onThisHost() {
        List<Path> dirs = new ArrayList<>();
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (!dir.isEmpty()) {
                dirs.add(Path.of(dir));
            }
        }
        for (String dir : List.of("/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin", "/bin")) {
            dirs.add(Path.of(dir));
        }
        return new HostTools(dirs);
    }

    /** The program, with its packages; one the table does not know is named by itself. */
    public static Tool tool(String program) {
        return KNOWN.getOrDefault(program, new Tool(program, program, program));
    }

    public boolean installed(String program) {
        return searchPath.stream().anyMatch(dir -> Files.isExecutable(dir.resolve(program)));
    }

    /** Returns when the program is installed; PRECONDITION naming it and its package when not. */
    public void require(String program) {
        if (!installed(program)) {
            throw StorageException.precondition("%s on this node", tool(program).notInstalled());
        }
    }
}
