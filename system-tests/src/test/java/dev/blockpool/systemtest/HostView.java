package dev.blockpool.systemtest;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * The mounts and loop devices of the test, read straight from /proc/self/mountinfo and
 * /sys/block (not through the driver's own parsers, which are under test), and the forced
 * cleanup that runs even when the driver failed. Only mounts below the test's directory or
 * on its pool's loop devices, and loop devices backed by its pool, are ever touched: other
 * tests may be using mounts and loop devices on the same machine.
 */
final class HostView {

    /** A line of mountinfo: its ID, where it is mounted, the filesystem's type and source, and the root inside it. */
    record Mount(int id, Path mountPoint, String root, String fsType, String source) {
        @Override
        public String toString() {
            return mountPoint + " (" + fsType + " " + source + (root.equals("/") ? "" : " " + root) + ")";
        }
    }

    /** A loop device and the file behind it. */
    record Loop(String device, Path backingFile) {}

    private final Path root;
    private final Path pool;

    HostView(Path root, Path pool) {
        this.root = root;
        this.pool = pool;
    }

    static List<Mount> mounts() {
        List<Mount> mounts = new ArrayList<>();
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
                String[] f = line.split(" ");
                int dash = List.of(f).indexOf("-");
                String point = unescape(f[4]);
                if (point.endsWith("//deleted")) {
                    point = point.substring(0, point.length() - "//deleted".length());
                }
                mounts.add(new Mount(
                        Integer.parseInt(f[0]), Path.of(point), unescape(f[3]), f[dash + 1], unescape(f[dash + 2])));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return mounts;
    }

    /** The kernel writes space, tab, newline and backslash in mountinfo as octal escapes. */
    private static String unescape(String field) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < field.length(); i++) {
            char c = field.charAt(i);
            if (c == '\\'
                    && i + 3 < field.length()
                    && field.substring(i + 1, i + 4).matches("[0-7]{3}")) {
                out.append((char) Integer.parseInt(field.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }

    static List<Loop> loops() {
        List<Loop> loops = new ArrayList<>();
        try (DirectoryStream<Path> block = Files.newDirectoryStream(Path.of("/sys/block"), "loop*")) {
            for (Path dev : block) {
                Path backing = dev.resolve("loop/backing_file");
                try {
                    String file = Files.readString(backing).strip();
                    if (file.endsWith(" (deleted)")) {
                        file = file.substring(0, file.length() - " (deleted)".length());
                    }
                    loops.add(new Loop("/dev/" + dev.getFileName(), Path.of(file)));
                } catch (IOException e) {
                    // not attached (no loop/backing_file), or detached while we looked
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return loops;
    }

    /** The loop devices backed by a file in the test's pool. */
    List<Loop> poolLoops() {
        return loops().stream().filter(l -> l.backingFile().startsWith(pool)).toList();
    }

    /**
     * The mounts that are the test's doing: below its directory, or of one of its pool's loop
     * devices wherever they are (mounted straight from the device, or a bind of its device node).
     */
    List<Mount> ownMounts() {
        Set<String> devices = poolLoops().stream().map(Loop::device).collect(Collectors.toSet());
        return mounts().stream()
                .filter(m -> m.mountPoint().startsWith(root)
                        || devices.contains(m.source())
                        || (m.fsType().equals("devtmpfs") && devices.contains("/dev" + m.root())))
                .toList();
    }

    /** Lazily unmounts one mount point, not following symlinks on the way. */
    static boolean unmount(Path mountPoint) {
        return run("umount", "--lazy", "--no-canonicalize", mountPoint.toString());
    }

    static boolean detach(String device) {
        return run("losetup", "--detach", device);
    }

    /** Unmounts every mount of the test (deepest and newest first) and detaches its pool's loop devices. */
    void forceCleanUp() {
        for (int attempt = 0; attempt < 5; attempt++) {
            List<Mount> mounts = ownMounts().stream()
                    .sorted(Comparator.comparingInt((Mount m) -> m.mountPoint().getNameCount())
                            .reversed()
                            .thenComparing(Comparator.comparingInt(Mount::id).reversed()))
                    .toList();
            if (mounts.isEmpty()) {
                break;
            }
            mounts.forEach(m -> unmount(m.mountPoint()));
        }
        poolLoops().forEach(l -> detach(l.device()));
    }

    static boolean run(String... command) {
        try {
            Process process = new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start();
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                return false;
            }
            return process.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
