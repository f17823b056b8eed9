package dev.blockpool.systemtest;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.host.loops.FileId;
import dev.blockpool.host.loops.LoopDevice;
import dev.blockpool.host.loops.LoopSysfs;
import dev.blockpool.host.mounts.MountInfo;
import dev.blockpool.host.mounts.ProcMountTable;
import dev.blockpool.systemtest.CallerModel.Kind;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The host and the pool as they really are, read directly rather than through the driver:
 * mounts below the test's directory, loop devices bound to files in its pool, the pool's files.
 * Everything it changes (ageing pool files, the final clean-up) lies below that directory.
 */
final class HostInspector {

    private static final CommandRunner RUNNER = new ProcessCommandRunner();
    private static final Pattern CAPACITY = Pattern.compile("\"capacityBytes\"\\s*:\\s*(\\d+)");
    private static final Pattern SIZE = Pattern.compile("\"sizeBytes\"\\s*:\\s*(\\d+)");

    private final Path dir;
    private final Path pool;
    private final LoopSysfs loops = LoopSysfs.onThisHost(new BlockingCalls("inspector", 2));

    /** {@code pool} inside {@code dir}, or elsewhere (a shared pool's mount), where it must exist already. */
    HostInspector(Path dir, Path pool) {
        this.dir = canonical(dir);
        this.pool = pool.startsWith(dir) ? this.dir.resolve(dir.relativize(pool)) : canonical(pool);
    }

    Path volumeImage(String id) {
        return pool.resolve("volumes").resolve(id + ".img");
    }

    // Mounts and loop devices.

    List<MountInfo> mountsUnder() {
        return new ProcMountTable()
                .mounts().stream().filter(m -> m.mountPoint().startsWith(dir)).toList();
    }

    List<MountInfo> mountsAt(Path path) {
        Path wanted = canonical(path);
        return new ProcMountTable()
                .mounts().stream().filter(m -> m.mountPoint().equals(wanted)).toList();
    }

    /**
     * Loop devices bound to any file in the pool, by the file's device and inode whatever mount
     * namespace attached them, and those of images deleted while bound that this namespace sees.
     */
    List<LoopDevice> poolLoops() {
        Set<FileId> files = poolFileIds();
        return loops.list().stream()
                .filter(l -> files.contains(l.backingFileId())
                        || (l.backingFileDeleted() && l.backingFile().startsWith(pool)))
                .toList();
    }

    List<LoopDevice> loopsOf(String volumeId) {
        Optional<FileId> image = fileId(volumeImage(volumeId));
        return poolLoops().stream()
                .filter(l -> image.equals(Optional.of(l.backingFileId())))
                .toList();
    }

    private Set<FileId> poolFileIds() {
        Set<FileId> ids = new HashSet<>();
        for (String kind : List.of("volumes", "snapshots")) {
            list(pool.resolve(kind)).forEach(file -> fileId(file).ifPresent(ids::add));
        }
        return ids;
    }

    private static Optional<FileId> fileId(Path file) {
        try {
            return Optional.of(FileId.of(file));
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /** The filesystem blkid finds on the device, "none" when it finds none. */
    String filesystemOn(LoopDevice loop) {
        CommandRunner.Result result = RUNNER.run(
                "blkid", "-p", "-o", "value", "-s", "TYPE", loop.device().toString());
        return result.ok() && !result.stdout().isBlank() ? result.stdout().strip() : "none";
    }

    /**
     * What a read-only check ({@code e2fsck -f -n}) finds wrong with the ext4 filesystem in a
     * volume's image, which must not be in use; empty when it is clean or the image holds none.
     */
    Optional<String> filesystemDamage(String volumeId) {
        String image = volumeImage(volumeId).toString();
        CommandRunner.Result probe = RUNNER.run("blkid", "-p", "-o", "value", "-s", "TYPE", image);
        if (!probe.ok() || !probe.stdout().strip().equals("ext4")) {
            return Optional.empty();
        }
        CommandRunner.Result check = RUNNER.run("e2fsck", "-f", "-n", image);
        return check.ok() ? Optional.empty() : Optional.of(check.describe().replace('\n', ' '));
    }

    // The pool's files.

    /** The files of one pool directory: images by ID with their sizes, records by ID, temporary files. */
    record PoolFiles(Map<String, Long> images, Set<String> records, List<String> temporary, List<String> other) {}

    PoolFiles poolFiles(String kind) {
        Map<String, Long> images = new TreeMap<>();
        Set<String> records = new TreeSet<>();
        List<String> temporary = new ArrayList<>();
        List<String> other = new ArrayList<>();
        for (Path file : list(pool.resolve(kind))) {
            String name = file.getFileName().toString();
            if (name.endsWith(".img")) {
                images.put(name.substring(0, name.length() - 4), size(file));
            } else if (name.endsWith(".json")) {
                records.add(name.substring(0, name.length() - 5));
            } else if (name.endsWith(".tmp")) {
                temporary.add(name);
            } else {
                other.add(name);
            }
        }
        return new PoolFiles(images, records, temporary, other);
    }

    /**
     * The driver leaves young files alone in its reconcile (a settle time of 10 minutes, fixed, with
     * no flag to shorten it): to let that time pass without waiting, every pool file is made older.
     */
    void agePoolFiles(Duration by) {
        Instant then = Instant.now().minus(by);
        for (String kind : List.of("volumes", "snapshots", "nodes")) {
            for (Path file : list(pool.resolve(kind))) {
                try {
                    Files.setLastModifiedTime(file, FileTime.from(then));
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
        }
    }

    /**
     * Where a kill fell, as the host shows it right after: the pool files of the ID and, for a
     * volume, its loop devices, the filesystem on them and what is mounted at its kubelet paths.
     * The first part of the answer is its category (without sizes and names), for the statistics.
     * Temporary record files keep the process ID in their names, so one may be left by an
     * earlier kill: they stay until the reconcile's settle time has passed.
     */
    record KillPoint(String category, String detail) {}

    KillPoint describe(String id, Optional<CallerModel.Volume> volume, CallerModel model) {
        String kind = id.startsWith("snap-") ? "snapshots" : "volumes";
        PoolFiles files = poolFiles(kind);
        Long imageSize = files.images().get(id);
        boolean committed = files.records().contains(id);
        long temps =
                files.temporary().stream().filter(t -> t.startsWith(id + ".")).count();
        List<String> category = new ArrayList<>();
        category.add(
                imageSize != null
                        ? (committed ? "image+record" : "image without a record")
                        : (committed ? "record without image" : "no files"));
        if (temps > 0) {
            category.add("temporary record");
        }
        StringBuilder detail = new StringBuilder("pool: ").append(category.getFirst());
        if (imageSize != null) {
            detail.append(", image ").append(imageSize / CallerModel.MiB).append(" MiB");
        }
        if (committed) {
            String json = read(pool.resolve(kind).resolve(id + ".json"));
            Matcher size = (kind.equals("snapshots") ? SIZE : CAPACITY).matcher(json);
            if (size.find()) {
                long recorded = Long.parseLong(size.group(1));
                detail.append(", record ").append(recorded / CallerModel.MiB).append(" MiB");
                if (imageSize != null && imageSize != recorded) {
                    category.add("image and record sizes differ");
                }
            }
            if (json.contains("\"nodeId\"")) {
                detail.append(", attached");
            }
        }
        if (temps > 0) {
            detail.append(", ").append(temps).append(" temporary record file(s)");
        }
        if (volume.isPresent()) {
            CallerModel.Volume v = volume.get();
            List<LoopDevice> bound = loopsOf(v.id);
            String fs = bound.isEmpty() || v.kind == Kind.BLOCK ? "" : " " + filesystemOn(bound.getFirst());
            category.add(bound.size() + " loop" + fs);
            detail.append("; loops: ")
                    .append(
                            bound.isEmpty()
                                    ? "none"
                                    : bound.stream()
                                                    .map(l -> l.name() + " " + l.sizeBytes() / CallerModel.MiB + " MiB"
                                                            + (l.autoclear() ? " autoclear" : ""))
                                                    .toList()
                                            + fs);
            Map<String, Path> paths = new java.util.LinkedHashMap<>();
            paths.put("staging", model.staging(v));
            OperationGenerator.PODS.forEach(pod -> paths.put("target " + pod, model.target(v, pod)));
            paths.forEach((name, path) -> {
                String state = pathState(path);
                if (!state.equals("missing")) {
                    detail.append("; ").append(name).append(": ").append(state);
                    category.add(name.replaceAll(" pod-.*", "") + " " + state);
                }
            });
        }
        return new KillPoint(String.join(", ", category), detail.toString());
    }

    private String pathState(Path path) {
        int mounts = mountsAt(path).size();
        if (mounts > 0) {
            return mounts == 1 ? "mounted" : mounts + " mounts";
        }
        if (Files.isDirectory(path, LinkOption.NOFOLLOW_LINKS)) {
            return "directory";
        }
        return Files.exists(path, LinkOption.NOFOLLOW_LINKS) ? "file" : "missing";
    }

    // Clean-up.

    /**
     * Removes whatever is left below the directory, even after a failure: lazy unmounts deepest
     * first, then detaches the loop devices bound to pool files, then deletes the directory.
     * Returns what it had to clean up.
     */
    List<String> cleanUp() {
        List<String> cleaned = releaseMountsAndLoops();
        if (mountsUnder().isEmpty()) {
            try (Stream<Path> walk = Files.walk(dir)) {
                for (Path path : walk.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(path);
                }
            } catch (IOException e) {
                cleaned.add("could not delete " + dir + ": " + e);
            }
        } else {
            cleaned.add("still mounted, so kept: "
                    + mountsUnder().stream().map(MountInfo::mountPoint).toList());
        }
        return cleaned;
    }

    /**
     * What a host's death takes with it: lazy unmounts below the directory, deepest first, then
     * the loop devices bound to pool files are detached. Returns what it had to release.
     */
    List<String> releaseMountsAndLoops() {
        List<String> cleaned = new ArrayList<>();
        for (int round = 0; round < 5 && !mountsUnder().isEmpty(); round++) {
            for (MountInfo mount : mountsUnder().stream()
                    .sorted(Comparator.comparingInt(
                                    (MountInfo m) -> m.mountPoint().getNameCount())
                            .reversed()
                            .thenComparing(
                                    Comparator.comparingInt(MountInfo::mountId).reversed()))
                    .toList()) {
                cleaned.add("umount -l " + mount.mountPoint());
                RUNNER.run("umount", "--lazy", mount.mountPoint().toString());
            }
        }
        for (LoopDevice loop : poolLoops()) { // never a device of anything outside the pool
            cleaned.add("losetup -d " + loop.device() + " (" + loop.backingFile() + ")");
            RUNNER.run("losetup", "--detach", loop.device().toString());
        }
        return cleaned;
    }

    private static List<Path> list(Path directory) {
        if (!Files.isDirectory(directory)) {
            return List.of();
        }
        try (Stream<Path> files = Files.list(directory)) {
            return files.sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static long size(Path file) {
        try {
            return Files.size(file);
        } catch (IOException e) {
            return -1; // removed meanwhile
        }
    }

    private static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            return "";
        }
    }

    /** The path as the kernel prints it in this mount namespace: absolute, symlinks resolved where it exists. */
    static Path canonical(Path path) {
        try {
            return path.toRealPath();
        } catch (IOException e) {
            return path.toAbsolutePath().normalize();
        }
    }
}
