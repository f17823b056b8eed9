package dev.blockpool.systemtest;

import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.HostRequirements;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.host.mounts.ProcMountTable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.UnknownHostException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;

/**
 * A real GlusterFS volume on this host, as an operator would make one for a shared pool: a
 * glusterd of its own (its state, CLI socket and log inside {@code dir}, started directly, no
 * service manager), one brick in {@code dir}, and FUSE mounts of the volume, one per "node".
 * {@link #close()} undoes all of it, from whatever point {@link #start} reached.
 *
 * <p>Some of what GlusterFS writes has no option to move it: glusterd makes directories and
 * appends to {@code cmd_history.log} in {@code /var/log/glusterfs}, and each brick writes its log
 * there and its socket in {@code /var/run/gluster}. What those two directories held before the
 * start is noted ({@link HostDirectories}), and {@link #close()} removes what was added since and
 * cuts what was appended: only one glusterd can serve port {@value #GLUSTERD_PORT} on a host, so
 * while this one runs, whatever GlusterFS writes there is its own. The gluster CLI logs into
 * {@code dir}.
 *
 * <p>GlusterFS's client-side caches are switched off ({@link #COHERENT}): with them, a record
 * another mount just replaced reads back old for about a second, which a shared pool cannot
 * have (docs/pool.md).
 */
final class GlusterVolume implements AutoCloseable {

    /** glusterd's management port: its brick processes find it only there. */
    static final int GLUSTERD_PORT = 24007;
    /** The volume options docs/pool.md asks of a pool's volume: no client cache serves old records. */
    static final List<String> COHERENT = List.of(
            "performance.quick-read",
            "performance.stat-prefetch",
            "performance.io-cache",
            "performance.read-ahead",
            "performance.readdir-ahead",
            "performance.write-behind",
            "performance.open-behind");

    private static final String VOLUME = "blockpool-test";
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(60);
    private static final Duration START_TIMEOUT = Duration.ofSeconds(30);
    private static final CommandRunner RUNNER = new ProcessCommandRunner();

    private final Path dir;
    private final String host;
    private final HostDirectories before = HostDirectories.now();
    private final List<Path> mounts = new ArrayList<>();
    private boolean created;

    private GlusterVolume(Path dir, String host) {
        this.dir = dir;
        this.host = host;
    }

    /** Why a GlusterFS volume cannot be made here, or empty when it can. */
    static Optional<String> unavailable() {
        if (!HostRequirements.isRoot()) {
            return Optional.of("needs root for glusterd, FUSE mounts and loop devices");
        }
        if (!Files.exists(Path.of("/dev/fuse"))) {
            return Optional.of("no /dev/fuse on this host");
        }
        if (!Files.exists(Path.of("/dev/loop-control"))) {
            return Optional.of("no /dev/loop-control on this host (loop module not loaded?)");
        }
        for (String tool : List.of("glusterd", "gluster", "glusterfs")) {
            if (Stream.of("/usr/sbin", "/sbin", "/usr/bin").noneMatch(d -> Files.isExecutable(Path.of(d, tool)))) {
                return Optional.of("`" + tool + "` is not installed (Debian: glusterfs-server, glusterfs-client)");
            }
        }
        try (ServerSocket probe = new ServerSocket(GLUSTERD_PORT)) {
            probe.setReuseAddress(true);
        } catch (IOException e) {
            return Optional.of("port " + GLUSTERD_PORT + " is taken (another glusterd runs on this host)");
        }
        try {
            InetAddress.getByName(hostName());
        } catch (UnknownHostException e) {
            return Optional.of("this host's name " + hostName() + " does not resolve; glusterd names its brick by it");
        }
        return Optional.empty();
    }

    /** glusterd, the volume with one brick in {@code dir}, and a FUSE mount at each of {@code mountPoints}. */
    static GlusterVolume start(Path dir, List<Path> mountPoints) throws IOException, InterruptedException {
        GlusterVolume volume = new GlusterVolume(dir, hostName());
        try {
            volume.startGlusterd();
            volume.gluster("volume", "create", VOLUME, volume.host + ":" + dir.resolve("brick"), "force");
            volume.created = true;
            for (String option : COHERENT) {
                volume.gluster("volume", "set", VOLUME, option, "off");
            }
            volume.gluster("volume", "start", VOLUME);
            for (Path mountPoint : mountPoints) {
                volume.mount(mountPoint);
            }
            return volume;
        } catch (IOException | InterruptedException | RuntimeException e) {
            volume.close();
            throw e;
        }
    }

    private void startGlusterd() throws IOException, InterruptedException {
        for (String sub : List.of("state", "run", "brick", "logs")) {
            Files.createDirectories(dir.resolve(sub));
        }
        // The packaged glusterd.vol with every path moved into dir.
        Files.writeString(dir.resolve("glusterd.vol"), """
                volume management
                    type mgmt/glusterd
                    option working-directory %s
                    option run-directory %s
                    option glusterd-sockfile %s
                    option transport-type socket
                    option transport.socket.listen-port %d
                    option ping-timeout 0
                    option event-threads 1
                end-volume
                """.formatted(
                        dir.resolve("state"), dir.resolve("run"), cliSocket(), GLUSTERD_PORT));
        run(
                "glusterd",
                "-f",
                dir.resolve("glusterd.vol").toString(),
                "-p",
                pidFile().toString(),
                "-l",
                dir.resolve("logs/glusterd.log").toString());
        await(() -> Files.exists(cliSocket()), "glusterd's socket " + cliSocket());
    }

    private void mount(Path mountPoint) throws IOException, InterruptedException {
        Files.createDirectories(mountPoint);
        mounts.add(mountPoint);
        String name = mountPoint.getFileName().toString();
        run(
                "glusterfs",
                "--volfile-server=" + host,
                "--volfile-id=" + VOLUME,
                "--pid-file=" + dir.resolve("run/mount-" + name + ".pid"),
                "--log-file=" + dir.resolve("logs/mount-" + name + ".log"),
                mountPoint.toString());
        await(() -> isMounted(mountPoint), "the FUSE mount at " + mountPoint);
    }

    /** Unmounts, stops and deletes the volume, and stops glusterd; as far as {@link #start} got. */
    @Override
    public void close() {
        List<String> problems = new ArrayList<>();
        for (Path mountPoint : mounts.reversed()) {
            if (isMounted(mountPoint)
                    && !RUNNER.run(CALL_TIMEOUT, List.of("umount", mountPoint.toString()))
                            .ok()) {
                // still open somewhere: detach it now, its FUSE process ends once it is unused
                CommandRunner.Result lazy = RUNNER.run(CALL_TIMEOUT, List.of("umount", "-l", mountPoint.toString()));
                if (!lazy.ok()) {
                    problems.add(lazy.describe());
                }
            }
        }
        if (created) {
            glusterQuietly(problems, "volume", "stop", VOLUME, "force");
            glusterQuietly(problems, "volume", "delete", VOLUME);
        }
        // The brick process ends with the volume's stop; this ends whatever a failed start left.
        for (Path pidFile : pidFiles()) {
            processOf(pidFile).ifPresent(GlusterVolume::stop);
        }
        problems.addAll(before.restore());
        if (!problems.isEmpty()) {
            throw new IllegalStateException("GlusterFS clean-up: " + String.join("; ", problems));
        }
    }

    private static void stop(ProcessHandle process) {
        process.destroy();
        try {
            process.onExit().get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            process.destroyForcibly();
        }
    }

    /** glusterd's pid file and those of every brick and mount process it or this class started. */
    private List<Path> pidFiles() {
        try (Stream<Path> files = Files.walk(dir.resolve("run"))) {
            List<Path> found = new ArrayList<>(
                    files.filter(p -> p.toString().endsWith(".pid")).toList());
            found.remove(pidFile());
            found.add(pidFile()); // glusterd last: it answers the volume's stop
            return found;
        } catch (IOException | UncheckedIOException e) {
            return List.of(pidFile());
        }
    }

    private static Optional<ProcessHandle> processOf(Path pidFile) {
        try {
            return ProcessHandle.of(Long.parseLong(Files.readString(pidFile).strip()))
                    .filter(ProcessHandle::isAlive);
        } catch (IOException | NumberFormatException e) {
            return Optional.empty();
        }
    }

    private Path pidFile() {
        return dir.resolve("run/glusterd.pid");
    }

    private Path cliSocket() {
        return dir.resolve("run/glusterd.socket");
    }

    private void gluster(String... args) {
        List<String> command = new ArrayList<>(List.of(
                "gluster",
                "--mode=script",
                "--glusterd-sock=" + cliSocket(),
                "--log-file=" + dir.resolve("logs/cli.log")));
        command.addAll(List.of(args));
        CommandRunner.Result result = RUNNER.run(CALL_TIMEOUT, command);
        if (!result.ok()) {
            throw new IllegalStateException(result.describe());
        }
    }

    private void glusterQuietly(List<String> problems, String... args) {
        try {
            gluster(args);
        } catch (IllegalStateException e) {
            problems.add(e.getMessage());
        }
    }

    private static void run(String... command) {
        CommandRunner.Result result = RUNNER.run(CALL_TIMEOUT, List.of(command));
        if (!result.ok()) {
            throw new IllegalStateException(result.describe());
        }
    }

    static boolean isMounted(Path mountPoint) {
        Path wanted = HostInspector.canonical(mountPoint);
        return new ProcMountTable()
                .mounts().stream().anyMatch(m -> m.mountPoint().equals(wanted));
    }

    /** Waits for something a daemon does after its start command returned; a wait, never a judgement of speed. */
    private static void await(BooleanSupplier done, String what) throws InterruptedException {
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(what + " did not appear within " + START_TIMEOUT.toSeconds() + " s");
            }
            Thread.sleep(20);
        }
    }

    /**
     * What GlusterFS's own directories on the host held at one moment: every path in them, with
     * each regular file's length.
     */
    record HostDirectories(Map<Path, Long> lengths) {

        static final List<Path> ROOTS = List.of(Path.of("/var/run/gluster"), Path.of("/var/log/glusterfs"));
        /** What a directory, socket or other file that is not a regular one is noted with. */
        private static final long NOT_A_FILE = -1;

        static HostDirectories now() {
            Map<Path, Long> lengths = new HashMap<>();
            for (Path root : ROOTS) {
                try (Stream<Path> paths = Files.walk(root)) {
                    paths.forEach(p -> lengths.put(p, lengthOf(p)));
                } catch (NoSuchFileException e) {
                    // not there: glusterd makes it, and then it is this run's
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
            return new HostDirectories(Map.copyOf(lengths));
        }

        private static long lengthOf(Path path) {
            try {
                return Files.isRegularFile(path, LinkOption.NOFOLLOW_LINKS) ? Files.size(path) : NOT_A_FILE;
            } catch (IOException e) {
                return NOT_A_FILE;
            }
        }

        /** What {@code later} holds that this did not: paths added, gone, or of another length. */
        List<String> changesIn(HostDirectories later) {
            List<String> changes = new ArrayList<>();
            later.lengths().forEach((path, length) -> {
                Long old = lengths.get(path);
                if (old == null) {
                    changes.add("added " + path);
                } else if (!old.equals(length)) {
                    changes.add("changed " + path + " (" + old + " -> " + length + " bytes)");
                }
            });
            lengths.keySet().stream()
                    .filter(p -> !later.lengths().containsKey(p))
                    .forEach(p -> changes.add("removed " + p));
            return changes.stream().sorted().toList();
        }

        /**
         * Removes every path added since (deepest first) and cuts every file that grew back to its
         * old length; returns what could not be undone.
         */
        List<String> restore() {
            List<String> problems = new ArrayList<>();
            Map<Path, Long> after = now().lengths();
            List<Path> added = after.keySet().stream()
                    .filter(p -> !lengths.containsKey(p))
                    .sorted(Comparator.comparingInt(Path::getNameCount).reversed())
                    .toList();
            for (Path path : added) {
                try {
                    Files.deleteIfExists(path);
                } catch (IOException e) {
                    problems.add("cannot remove " + path + ": " + e);
                }
            }
            lengths.forEach((path, length) -> {
                if (length != NOT_A_FILE && after.getOrDefault(path, NOT_A_FILE) > length) {
                    try (FileChannel file = FileChannel.open(path, StandardOpenOption.WRITE)) {
                        file.truncate(length);
                    } catch (IOException e) {
                        problems.add("cannot cut " + path + " back to " + length + " bytes: " + e);
                    }
                }
            });
            return problems;
        }
    }

    private static String hostName() {
        try {
            return Files.readString(Path.of("/proc/sys/kernel/hostname")).strip();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
