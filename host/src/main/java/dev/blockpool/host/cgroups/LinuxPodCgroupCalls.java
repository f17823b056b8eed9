package dev.blockpool.host.cgroups;

import dev.blockpool.common.IoLimits;
import dev.blockpool.common.LastKept;
import dev.blockpool.common.StorageException;
import dev.blockpool.host.mounts.DeviceNumber;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitOption;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardOpenOption;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * {@link PodCgroupCalls} through the cgroup filesystem under {@code root} (the host's
 * {@code /sys/fs/cgroup}). The pod's cgroup is found by its UID as kubelet names it, with the
 * cgroupfs driver ({@code pod<uid>}) or the systemd one ({@code kubepods-...-pod<uid_with_underscores>.slice}),
 * at any depth up to {@link #POD_DEPTH} below the hierarchy of the I/O controller (kubelet's
 * {@code --cgroup-root} may add levels). Nothing is written anywhere else, no symlink is followed,
 * and a rule already as asked is not written again (a write restarts the throttle's accounting).
 *
 * <p>cgroup v2 ({@code io.max}) throttles a cgroup's whole subtree: the pod's cgroup is set. cgroup
 * v1 ({@code blkio.throttle.*}) is flat: a rule in the pod's cgroup does not govern the cgroups of
 * its containers below it, so each of those is set too, and a container started later is set by
 * the next call: {@link #awaitNewCgroup} wakes the caller as soon as its cgroup is made (inotify
 * on the cgroups of the pods limited here).
 */
public final class LinuxPodCgroupCalls implements PodCgroupCalls {

    /** Where the host's cgroup filesystems are. */
    public static final Path HOST_ROOT = Path.of("/sys/fs/cgroup");

    /** How deep below the hierarchy a pod's cgroup may be: kubepods, its QoS class, and kubelet's cgroup root. */
    static final int POD_DEPTH = 6;

    /** A pod UID as kubelet gives it: a UUID, or 32 hex digits for a static pod. Never a path. */
    private static final Pattern POD_UID = Pattern.compile("[0-9a-f]{8}(-?[0-9a-f]{4}){3}-?[0-9a-f]{12}");

    /** Pods' cgroups kept once found: as many as a node runs pods, many times over. */
    private static final int KEPT = 4096;

    private final Path root;
    /**
     * The cgroups each pod was found at, by UID: the look sets every published pod every few seconds,
     * and a walk of the hierarchy reads every cgroup's files. A cgroup kept is used while it is still
     * a directory of that name; else the pod is looked for again.
     */
    private final Map<String, List<Path>> found = LastKept.map(KEPT);
    /** The cgroup v1 pod cgroups limited here, watched for the cgroups of their new containers; made at the first. */
    private WatchService births;

    public LinuxPodCgroupCalls(Path root) {
        this.root = root;
    }

    /** Whether {@code text} is a pod UID as kubelet writes it. */
    public static boolean isPodUid(String text) {
        return POD_UID.matcher(text).matches();
    }

    @Override
    public List<Path> limit(String podUid, DeviceNumber device, IoLimits limits) {
        if (!isPodUid(podUid)) {
            throw new IllegalArgumentException("not a pod UID: " + podUid);
        }
        Optional<Controller> found = controller();
        if (found.isEmpty() && limits.none()) {
            return List.of(); // nothing to lift where nothing could have been set
        }
        Controller controller = found.orElseThrow(() -> StorageException.precondition(
                "there is no cgroup hierarchy of the I/O controller at %s (neither cgroup v2 nor a blkio "
                        + "directory): the node plugin needs the host's /sys/fs/cgroup mounted there to limit "
                        + "a volume's I/O (docs/deploy.md)",
                root));
        List<Path> limited = new ArrayList<>();
        for (Path pod : podCgroupsOf(controller.hierarchy(), podUid)) {
            if (controller instanceof V1 && !limits.none()) {
                watchBirthsIn(pod);
            }
            for (Path cgroup : controller.countedIn(pod)) {
                if (controller.set(cgroup, device, limits)) {
                    limited.add(cgroup);
                }
            }
        }
        return limited;
    }

    @Override
    public boolean awaitNewCgroup(Duration limit) throws InterruptedException {
        WatchService watching;
        synchronized (this) {
            watching = births;
        }
        if (watching == null) {
            Thread.sleep(limit);
            return false;
        }
        WatchKey key = watching.poll(limit.toNanos(), TimeUnit.NANOSECONDS);
        if (key == null) {
            return false;
        }
        for (; key != null; key = watching.poll()) {
            key.pollEvents(); // which cgroup it was does not matter: the caller sets every pod's
            key.reset();
        }
        return true;
    }

    /**
     * Watches the pod's cgroup for the cgroups of containers made in it; a cgroup removed meanwhile
     * is not watched, and one that cannot be is left to the caller's next call.
     */
    private synchronized void watchBirthsIn(Path pod) {
        try {
            if (births == null) {
                births = pod.getFileSystem().newWatchService();
            }
            pod.register(births, StandardWatchEventKinds.ENTRY_CREATE);
        } catch (IOException | UnsupportedOperationException e) {
            // gone, or no inotify watch left: the caller's next call sets the new cgroups all the same
        }
    }

    /** The I/O controller of this host: v2 when {@code root} is a cgroup2 filesystem, else v1's blkio. */
    private Optional<Controller> controller() {
        if (Files.isRegularFile(root.resolve("cgroup.controllers"), LinkOption.NOFOLLOW_LINKS)) {
            return Optional.of(new V2(root));
        }
        Path blkio = root.resolve("blkio");
        return Files.isDirectory(blkio, LinkOption.NOFOLLOW_LINKS) ? Optional.of(new V1(blkio)) : Optional.empty();
    }

    /** The pod's cgroups, as found before while they are still there, else looked for. */
    private List<Path> podCgroupsOf(Path hierarchy, String podUid) {
        List<Path> before = found.getOrDefault(podUid, List.of());
        if (!before.isEmpty()
                && before.stream()
                        .allMatch(p -> p.startsWith(hierarchy) && Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS))) {
            return before;
        }
        List<Path> now = podCgroups(hierarchy, podUid);
        if (now.isEmpty()) {
            found.remove(podUid);
        } else {
            found.put(podUid, now);
        }
        return now;
    }

    /** The pod's cgroups below {@code hierarchy}: directories only, never through a symlink. */
    private static List<Path> podCgroups(Path hierarchy, String podUid) {
        String cgroupfs = "pod" + podUid;
        String systemd = "-pod" + podUid.replace('-', '_') + ".slice";
        List<Path> found = new ArrayList<>();
        try {
            Files.walkFileTree(hierarchy, EnumSet.noneOf(FileVisitOption.class), POD_DEPTH, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attributes) {
                    return isPod(dir, attributes) ? FileVisitResult.SKIP_SUBTREE : FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attributes) {
                    isPod(file, attributes); // a directory at the deepest level
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFileFailed(Path file, IOException e) {
                    return FileVisitResult.CONTINUE; // a cgroup removed while walking
                }

                private boolean isPod(Path path, BasicFileAttributes attributes) {
                    Path name = path.getFileName();
                    boolean pod = attributes.isDirectory()
                            && name != null
                            && (name.toString().equals(cgroupfs)
                                    || name.toString().endsWith(systemd));
                    if (pod) {
                        found.add(path);
                    }
                    return pod;
                }
            });
        } catch (IOException e) {
            throw StorageException.io(e, "cannot look for the cgroup of pod %s in %s", podUid, hierarchy);
        }
        return found;
    }

    /** How one version of the I/O controller keeps its throttle. */
    private sealed interface Controller permits V1, V2 {

        Path hierarchy();

        /** The cgroups whose rules govern the pod's containers. */
        List<Path> countedIn(Path pod);

        /** Sets the rules of {@code device} in {@code cgroup}; false when the cgroup is gone. */
        boolean set(Path cgroup, DeviceNumber device, IoLimits limits);
    }

    /** cgroup v1: one file per direction and unit, a line {@code MAJ:MIN value} per device; 0 removes it. */
    private record V1(Path hierarchy) implements Controller {

        @Override
        public List<Path> countedIn(Path pod) {
            try (Stream<Path> children = Files.list(pod)) {
                List<Path> cgroups = new ArrayList<>(List.of(pod));
                children.filter(c -> Files.isDirectory(c, LinkOption.NOFOLLOW_LINKS))
                        .sorted()
                        .forEach(cgroups::add);
                return cgroups;
            } catch (NoSuchFileException e) {
                return List.of();
            } catch (IOException e) {
                throw StorageException.io(e, "cannot list the cgroups of %s", pod);
            }
        }

        @Override
        public boolean set(Path cgroup, DeviceNumber device, IoLimits limits) {
            return setRule(cgroup, "blkio.throttle.read_iops_device", device, limits.readIops())
                    && setRule(cgroup, "blkio.throttle.write_iops_device", device, limits.writeIops())
                    && setRule(cgroup, "blkio.throttle.read_bps_device", device, limits.readBytesPerSecond())
                    && setRule(cgroup, "blkio.throttle.write_bps_device", device, limits.writeBytesPerSecond());
        }

        private static boolean setRule(Path cgroup, String name, DeviceNumber device, long value) {
            Path file = cgroup.resolve(name);
            Optional<String> current = read(file);
            if (current.isEmpty()) {
                return false;
            }
            long now = ruleOf(current.get(), device).map(Long::parseLong).orElse(0L);
            return now == value || write(file, device + " " + value);
        }
    }

    /** cgroup v2: {@code io.max}, a line {@code MAJ:MIN rbps= wbps= riops= wiops=} per device, "max" for none. */
    private record V2(Path hierarchy) implements Controller {

        private static final String IO_MAX = "io.max";

        @Override
        public List<Path> countedIn(Path pod) {
            return List.of(pod);
        }

        @Override
        public boolean set(Path cgroup, DeviceNumber device, IoLimits limits) {
            Path file = cgroup.resolve(IO_MAX);
            if (!Files.exists(file, LinkOption.NOFOLLOW_LINKS)
                    && Files.isDirectory(cgroup, LinkOption.NOFOLLOW_LINKS)) {
                throw StorageException.precondition(
                        "the pod's cgroup %s has no %s: the io controller is not enabled for pods "
                                + "(cgroup.subtree_control of the cgroups above it)",
                        cgroup, IO_MAX);
            }
            Optional<String> current = read(file);
            if (current.isEmpty()) {
                return false;
            }
            String wanted = "rbps=%s wbps=%s riops=%s wiops=%s"
                    .formatted(
                            max(limits.readBytesPerSecond()),
                            max(limits.writeBytesPerSecond()),
                            max(limits.readIops()),
                            max(limits.writeIops()));
            String now = ruleOf(current.get(), device).orElse("rbps=max wbps=max riops=max wiops=max");
            return now.equals(wanted) || write(file, device + " " + wanted);
        }

        private static String max(long value) {
            return value == 0 ? "max" : Long.toString(value);
        }
    }

    /** What a throttle file says of {@code device}: the rest of its line. */
    private static Optional<String> ruleOf(String content, DeviceNumber device) {
        String prefix = device + " ";
        return content.lines()
                .filter(line -> line.startsWith(prefix))
                .map(line -> line.substring(prefix.length()).strip())
                .findFirst();
    }

    /** The file's content; empty when it is gone (its cgroup was removed). A symlink is refused. */
    private static Optional<String> read(Path file) {
        try {
            requireNoSymlink(file);
            return Optional.of(Files.readString(file, StandardCharsets.US_ASCII));
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException e) {
            throw StorageException.io(e, "cannot read %s", file);
        }
    }

    /** Writes one rule, as one write(2); false when the cgroup is gone. */
    private static boolean write(Path file, String rule) {
        try {
            Files.write(
                    file,
                    (rule + "\n").getBytes(StandardCharsets.US_ASCII),
                    StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING,
                    LinkOption.NOFOLLOW_LINKS);
            return true;
        } catch (NoSuchFileException e) {
            return false;
        } catch (IOException e) {
            throw StorageException.io(e, "cannot write %s to %s", rule, file);
        }
    }

    private static void requireNoSymlink(Path file) throws IOException {
        if (Files.isSymbolicLink(file)) {
            throw new IOException("it is a symbolic link, which is never followed");
        }
    }
}
