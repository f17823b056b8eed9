package dev.blockpool.systemtest;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Files as the fuzz test compares them: for each path its type, permissions, owner and, by type,
 * a hash of the content, the link target or the device number. Symlinks are never followed, fifos
 * and devices never opened, and a directory on another filesystem (a mount point) is recorded
 * but not entered.
 */
record TreeSnapshot(Map<Path, String> entries) {

    /** One path that differs: {@code before} or {@code after} is null when it was added or removed. */
    record Change(Path path, String before, String after) {
        @Override
        public String toString() {
            return before == null
                    ? "added " + path + " (" + after + ")"
                    : after == null
                            ? "removed " + path + " (was " + before + ")"
                            : "changed " + path + " from " + before + " to " + after;
        }
    }

    /** The trees below {@code roots} (and each root itself); {@code contents} false skips hashing file data. */
    static TreeSnapshot of(List<Path> roots, boolean contents) {
        Map<Path, String> entries = new TreeMap<>();
        for (Path root : roots) {
            Object rootDevice = attribute(root, "unix:dev");
            walk(root, rootDevice, contents, entries);
        }
        return new TreeSnapshot(entries);
    }

    private static void walk(Path path, Object rootDevice, boolean contents, Map<Path, String> entries) {
        Map<String, Object> unix;
        try {
            unix = Files.readAttributes(path, "unix:mode,uid,gid,rdev,dev,size", LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException e) {
            return;
        } catch (IOException e) {
            entries.put(path, "unreadable: " + e.getMessage());
            return;
        }
        int mode = (Integer) unix.get("mode");
        String perms = "%04o %s:%s".formatted(mode & 07777, unix.get("uid"), unix.get("gid"));
        boolean mounted = rootDevice != null && !Objects.equals(unix.get("dev"), rootDevice);
        String kind = switch (mode & 0170000) {
            case 0040000 -> "dir";
            case 0100000 -> "file";
            case 0120000 -> "symlink";
            case 0010000 -> "fifo";
            case 0020000 -> "char device";
            case 0060000 -> "block device";
            case 0140000 -> "socket";
            default -> "type " + Integer.toOctalString(mode & 0170000);
        };
        String detail = switch (kind) {
            case "file" -> contents ? " " + unix.get("size") + " bytes sha256 " + hash(path) : "";
            case "symlink" -> " -> " + linkTarget(path);
            case "char device", "block device" -> " " + rdev((Long) unix.get("rdev"));
            default -> "";
        };
        entries.put(path, kind + " " + perms + detail + (mounted ? " [mount point]" : ""));
        if (kind.equals("dir") && !mounted) {
            List<Path> children = new ArrayList<>();
            try (DirectoryStream<Path> stream = Files.newDirectoryStream(path)) {
                stream.forEach(children::add);
            } catch (IOException e) {
                entries.put(path, entries.get(path) + " unlistable: " + e.getMessage());
            }
            for (Path child : children) {
                walk(child, rootDevice, contents, entries);
            }
        }
    }

    /** What differs from {@code later}, in path order. */
    List<Change> changesTo(TreeSnapshot later) {
        TreeSet<Path> paths = new TreeSet<>(entries.keySet());
        paths.addAll(later.entries.keySet());
        List<Change> changes = new ArrayList<>();
        for (Path path : paths) {
            String before = entries.get(path);
            String after = later.entries.get(path);
            if (!Objects.equals(before, after)) {
                changes.add(new Change(path, before, after));
            }
        }
        return changes;
    }

    static String rdev(long rdev) {
        long major = ((rdev >>> 8) & 0xfff) | ((rdev >>> 32) & ~0xfffL);
        long minor = (rdev & 0xff) | ((rdev >>> 12) & ~0xffL);
        return major + ":" + minor;
    }

    private static Object attribute(Path path, String name) {
        try {
            return Files.getAttribute(path, name, LinkOption.NOFOLLOW_LINKS);
        } catch (IOException e) {
            return null;
        }
    }

    private static String linkTarget(Path path) {
        try {
            return Files.readSymbolicLink(path).toString();
        } catch (IOException e) {
            return "?";
        }
    }

    /** The first MiB is plenty for the small files the test writes; anything bigger also shows in its size. */
    private static String hash(Path path) {
        try (InputStream in = Files.newInputStream(path, LinkOption.NOFOLLOW_LINKS)) {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            digest.update(in.readNBytes(1 << 20));
            return HexFormat.of().formatHex(digest.digest(), 0, 8);
        } catch (IOException e) {
            return "unreadable";
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
