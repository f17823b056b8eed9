package dev.blockpool.systemtest;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * The driver binary as a crash treats it: {@link #crash()} SIGKILLs the driver together with
 * every process it started (losetup, mkfs, cp, ...), as the end of its container would, and
 * {@link #ensureRunning()} starts it again on the same pool once it is dead, as kubelet
 * restarts a crashed container. An exit nobody caused is remembered, and is a violation.
 */
final class CrashableDriver implements AutoCloseable {

    private static final Duration SERVING_TIMEOUT = Duration.ofSeconds(60);
    /** A SIGKILLed process dies once its system call returns; one that takes longer is stuck in the kernel. */
    private static final Duration DEATH_TIMEOUT = Duration.ofSeconds(30);

    private final DriverProcess driver;
    /** Whether the driver was stopped on purpose, so that its exit is no violation. */
    private boolean exitExpected;

    private int kills;
    private int starts;
    private long startNanos;

    CrashableDriver(DriverProcess driver) {
        this.driver = driver;
    }

    DriverProcess process() {
        return driver;
    }

    int kills() {
        return kills;
    }

    int starts() {
        return starts;
    }

    Duration timeStarting() {
        return Duration.ofNanos(startNanos);
    }

    /**
     * Starts the driver when it is not running. Returns a description of the exit when it died
     * without being killed (then it is started again all the same), empty otherwise.
     */
    Optional<String> ensureRunning() throws IOException, InterruptedException {
        if (starts > 0 && driver.isAlive()) {
            return Optional.empty();
        }
        Optional<String> unexpected = Optional.empty();
        if (starts > 0 && !exitExpected) {
            unexpected = Optional.of("the driver exited by itself; its log ends:\n" + logTail(15));
        }
        driver.kill(); // closes the old client; the process is gone already
        long begin = System.nanoTime();
        driver.start();
        awaitServing();
        startNanos += System.nanoTime() - begin;
        starts++;
        exitExpected = false;
        return unexpected;
    }

    /**
     * SIGKILL to the driver and its children at once. The driver is stopped first (SIGSTOP) so
     * that it cannot start another child while they are collected; children then die before
     * they could outlive it.
     */
    void crash() throws IOException, InterruptedException {
        if (!driver.isAlive()) {
            return;
        }
        ProcessHandle process = driver.handle();
        new ProcessBuilder("kill", "-STOP", Long.toString(process.pid()))
                .start()
                .waitFor();
        List<ProcessHandle> children = process.descendants().toList();
        process.destroyForcibly();
        children.forEach(ProcessHandle::destroyForcibly);
        driver.kill(); // waits for it, closes the client
        for (ProcessHandle child : children) {
            awaitDead(child);
        }
        exitExpected = true;
        kills++;
    }

    /**
     * Waits for a SIGKILLed child of the driver to die. A zombie is dead: who reaps an orphan
     * (init, or a subreaper that may wait to the end of its own child) is not the test's to wait
     * for, and {@link ProcessHandle#onExit()} would wait for that reaping.
     */
    private static void awaitDead(ProcessHandle child) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + DEATH_TIMEOUT.toNanos();
        while (child.isAlive()) {
            String state = processState(child.pid());
            if (state.isEmpty() || state.equals("Z")) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IOException("process " + child.pid() + " "
                        + child.info().commandLine().orElse("") + " is still in state " + state + " " + DEATH_TIMEOUT
                        + " after its SIGKILL");
            }
            Thread.sleep(10);
        }
    }

    /** The state letter of /proc/PID/stat (R, S, D, Z, ...), empty when the process is gone. */
    private static String processState(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
            String[] after = stat.substring(stat.lastIndexOf(')') + 1).trim().split(" ", 2);
            return after[0];
        } catch (IOException | StringIndexOutOfBoundsException e) {
            return "";
        }
    }

    /**
     * DriverProcess.start() returns once the socket file exists, but after a kill the old socket
     * is still there until the new driver replaces it: wait until something answers on it.
     */
    private void awaitServing() throws IOException, InterruptedException {
        Path socket = driver.socket();
        long deadline = System.nanoTime() + SERVING_TIMEOUT.toNanos();
        while (true) {
            try (SocketChannel probe = SocketChannel.open(StandardProtocolFamily.UNIX)) {
                probe.connect(UnixDomainSocketAddress.of(socket));
                return;
            } catch (IOException notYet) {
                if (!driver.isAlive() || System.nanoTime() > deadline) {
                    throw new IOException("the driver did not start serving; its log ends:\n" + logTail(30), notYet);
                }
                Thread.sleep(10);
            }
        }
    }

    String logTail(int lines) {
        try {
            List<String> all = Files.readAllLines(driver.log());
            return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    /**
     * The driver stopped itself as it was told to (a test's kill point): a kill like {@link
     * #crash()}'s, which {@link #ensureRunning()} follows with a start. Whatever it had started
     * dies with it here.
     */
    void stoppedAtKillPoint() throws InterruptedException {
        if (driver.isAlive()) {
            throw new IllegalStateException("the driver is still running");
        }
        driver.kill(); // closes the old client
        exitExpected = true;
        kills++;
    }

    /** A planned restart: SIGTERM, as kubelet stops a pod, then a start on the same pool. */
    void restart() throws IOException, InterruptedException {
        driver.close();
        exitExpected = true;
        ensureRunning();
    }

    /** SIGTERM, as kubelet stops a pod; for the end of the run. */
    @Override
    public void close() {
        driver.close();
    }
}
