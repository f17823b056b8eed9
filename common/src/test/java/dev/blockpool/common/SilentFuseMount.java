package dev.blockpool.common;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * A real filesystem that never answers, as a dead NFS server or FUSE daemon looks to its clients:
 * a FUSE mount whose daemon holds /dev/fuse open and reads none of the kernel's requests, so
 * every statfs, stat or open below it waits. {@link #close()} kills the daemon, which aborts the
 * connection (the waiting calls return ENOTCONN), and detaches the mount.
 */
public final class SilentFuseMount implements AutoCloseable {

    private static final CommandRunner RUNNER = new ProcessCommandRunner();

    private final Path mountPoint;
    private final Process daemon;

    private SilentFuseMount(Path mountPoint, Process daemon) {
        this.mountPoint = mountPoint;
        this.daemon = daemon;
    }

    /** Mounts it on {@code mountPoint}, an existing directory (hiding what is there until closed). */
    public static SilentFuseMount on(Path mountPoint) throws IOException, InterruptedException {
        // The shell opens /dev/fuse as fd 3, mounts with it (no helper: -i), then becomes a
        // process that holds it and never reads: the kernel's requests, INIT first, go unanswered.
        Process daemon = new ProcessBuilder(
                        "bash",
                        "-c",
                        "exec 3<>/dev/fuse && mount -i -t fuse -o "
                                + "fd=3,rootmode=40000,user_id=0,group_id=0 silent \"$1\" "
                                + "&& echo mounted && exec sleep infinity",
                        "silent-fuse",
                        mountPoint.toString())
                .redirectErrorStream(true)
                .start();
        SilentFuseMount mount = new SilentFuseMount(mountPoint, daemon);
        String first = new String(daemon.getInputStream().readNBytes("mounted\n".length()));
        if (!first.equals("mounted\n")) {
            mount.close();
            throw new IOException("cannot mount a FUSE filesystem on " + mountPoint + ": " + first
                    + new String(daemon.getInputStream().readAllBytes()));
        }
        return mount;
    }

    /** Whether this host can mount one (root, /dev/fuse). */
    public static boolean available() {
        return Files.exists(Path.of("/dev/fuse"))
                && "0".equals(RUNNER.run("id", "-u").stdout().strip());
    }

    @Override
    public void close() {
        daemon.destroyForcibly();
        try {
            daemon.waitFor(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        // The connection is aborted now; a lazy detach also takes it off while something still
        // has it open (a call the kernel has not returned from yet).
        RUNNER.run("umount", "--lazy", mountPoint.toString());
    }
}
