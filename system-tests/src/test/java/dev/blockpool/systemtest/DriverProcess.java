package dev.blockpool.systemtest;

import csi.v1.ControllerGrpc;
import csi.v1.IdentityGrpc;
import csi.v1.NodeGrpc;
import dev.blockpool.csi.UnixSocketChannels;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The real {@code blockpool-csi} binary (bin/blockpool-csi with the jar the driver module just
 * packaged), run as a child process with its socket and log inside {@code dir}, with a gRPC
 * client on its socket: in mode "all" on a pool inside {@code dir}, or as one of several
 * drivers sharing a pool mounted elsewhere. {@link #kill()} is SIGKILL; {@link #start()} starts it again on
 * the same pool, as a restarted pod would.
 */
final class DriverProcess implements AutoCloseable {

    private static final Path REPO = Path.of("..").toAbsolutePath().normalize();
    private static final Duration START_TIMEOUT = Duration.ofSeconds(30);
    /**
     * The client event loop of every driver this JVM runs, never shut down. A call's deadline is
     * timed on its channel's loop: a loop shut down with a killed driver's client would leave a
     * call racing that kill waiting for ever.
     */
    private static final EventLoopGroup CLIENT_LOOP = UnixSocketChannels.sharedClientLoop();

    private final Path dir;
    private final Path socket;
    private final Path pool;
    private final Path log;
    private final String mode;
    private final String nodeId;
    private final String logLevel;
    private final List<String> extraArgs;
    private String poolScope = "shared";
    private Path workingDirectory;
    private List<String> launcher = List.of();
    private Path jar = REPO.resolve("driver/target/blockpool-csi.jar");
    private final Map<String, String> environment = new HashMap<>();
    private Process process;
    private ManagedChannel channel;

    DriverProcess(Path dir, String... extraArgs) {
        this(dir, dir.resolve("pool"), "all", "system-test-node", "warn", extraArgs);
    }

    /**
     * A driver in {@code mode} ("controller", "node", "all") on the pool at {@code pool}, e.g. one node's mount of it.
     */
    DriverProcess(Path dir, Path pool, String mode, String nodeId, String logLevel, String... extraArgs) {
        this.dir = dir;
        this.socket = dir.resolve("csi.sock");
        this.pool = pool;
        this.log = dir.resolve("driver.log");
        this.mode = mode;
        this.nodeId = nodeId;
        this.logLevel = logLevel;
        this.extraArgs = List.of(extraArgs);
    }

    /** Serves a pool of this node's own ({@code --pool-scope node}) rather than one every process shares. */
    DriverProcess nodeLocal() {
        this.poolScope = "node";
        return this;
    }

    /** Runs the binary in {@code directory} rather than this JVM's, e.g. to see where relative paths land. */
    DriverProcess workingDirectory(Path directory) {
        this.workingDirectory = directory;
        return this;
    }

    /**
     * Runs the binary through {@code command}, which ends by running its arguments in its own
     * process (e.g. unshare, then exec): to start it where a container would.
     */
    DriverProcess launchedBy(List<String> command) {
        this.launcher = List.copyOf(command);
        return this;
    }

    /** Runs this jar, and the AOT cache beside it, rather than the one the driver module packaged. */
    DriverProcess jar(Path jar) {
        this.jar = jar;
        return this;
    }

    /** Sets {@code name} in the environment of the next start; null leaves it out. */
    DriverProcess environment(String name, String value) {
        if (value == null) {
            environment.remove(name);
        } else {
            environment.put(name, value);
        }
        return this;
    }

    /** Starts the binary and waits until it answers on its socket. */
    DriverProcess start() throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(launcher);
        command.addAll(List.of(
                REPO.resolve("bin/blockpool-csi").toString(),
                "--endpoint",
                "unix://" + socket,
                "--pool-dir",
                pool.toString(),
                "--node-id",
                nodeId,
                "--mode",
                mode,
                // What most of these tests attack is a pool every process shares: one controller, many nodes.
                "--pool-scope",
                poolScope,
                "--log-level",
                logLevel));
        command.addAll(extraArgs);
        ProcessBuilder builder = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        builder.environment().put("BLOCKPOOL_JAR", jar.toString());
        builder.environment().putAll(environment);
        if (workingDirectory != null) {
            builder.directory(workingDirectory.toFile());
        }
        process = builder.start();
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        while (!Files.exists(socket)) {
            if (!process.isAlive() || System.nanoTime() > deadline) {
                throw new IOException("the driver did not start; its log:\n" + Files.readString(log));
            }
            Thread.sleep(20);
        }
        channel = UnixSocketChannels.channel(socket, CLIENT_LOOP);
        return this;
    }

    IdentityGrpc.IdentityBlockingStub identity() {
        return IdentityGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    ControllerGrpc.ControllerBlockingStub controller() {
        return ControllerGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    NodeGrpc.NodeBlockingStub node() {
        return NodeGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    ManagedChannel channel() {
        return channel;
    }

    Path socket() {
        return socket;
    }

    Path pool() {
        return pool;
    }

    Path log() {
        return log;
    }

    /** How long its log is now: where the lines of what the driver does next begin. */
    long logLength() throws IOException {
        return Files.exists(log) ? Files.size(log) : 0;
    }

    /**
     * Waits until the log holds {@code text} after {@code from} bytes, woken by each write to it
     * (inotify, through a {@link WatchService}) rather than by a timer; false when {@code limit}
     * passes first.
     */
    boolean awaitLogLine(long from, String text, Duration limit) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + limit.toNanos();
        try (WatchService watcher = log.getFileSystem().newWatchService()) {
            log.toAbsolutePath()
                    .getParent()
                    .register(watcher, StandardWatchEventKinds.ENTRY_CREATE, StandardWatchEventKinds.ENTRY_MODIFY);
            while (true) {
                // Read after registering: a write before it is in the file, one after it wakes the wait.
                if (logSince(from).contains(text)) {
                    return true;
                }
                long left = deadline - System.nanoTime();
                WatchKey key = left > 0 ? watcher.poll(left, TimeUnit.NANOSECONDS) : null;
                if (key == null) {
                    return logSince(from).contains(text);
                }
                key.pollEvents();
                key.reset();
            }
        }
    }

    private String logSince(long from) throws IOException {
        if (!Files.exists(log)) {
            return "";
        }
        try (FileChannel channel = FileChannel.open(log, StandardOpenOption.READ)) {
            long length = channel.size();
            ByteBuffer appended =
                    ByteBuffer.allocate((int) Math.max(0, Math.min(length - from, Integer.MAX_VALUE - 8)));
            while (appended.hasRemaining() && channel.read(appended, from + appended.position()) >= 0) {
                // read what was appended
            }
            return new String(appended.array(), 0, appended.position(), StandardCharsets.UTF_8);
        }
    }

    boolean isAlive() {
        return process != null && process.isAlive();
    }

    /** The running process, to signal it and the processes it started. */
    ProcessHandle handle() {
        return process.toHandle();
    }

    /** SIGKILL, as the OOM killer or a node crash would; waits for the process to be gone. */
    void kill() throws InterruptedException {
        closeClient();
        if (process != null) {
            process.destroyForcibly();
            process.waitFor();
        }
    }

    /** SIGTERM and wait, as kubelet stops a pod. */
    @Override
    public void close() {
        closeClient();
        if (process != null && process.isAlive()) {
            process.destroy();
            try {
                if (!process.waitFor(30, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                    process.waitFor();
                }
            } catch (InterruptedException e) {
                // An interrupted test still ends its driver; the interrupt goes on to its caller.
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }

    private void closeClient() {
        if (channel != null) {
            channel.shutdownNow();
            channel = null;
        }
    }
}
