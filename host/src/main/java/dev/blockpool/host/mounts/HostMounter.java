package dev.blockpool.host.mounts;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.FsType;
import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import dev.blockpool.common.TestKillPoint;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link Mounter} through mount(2) and umount2(2), made on the very object at the target path
 * (never through a symlink), with every unmount verified against the mount table.
 */
public final class HostMounter implements Mounter {

    private static final Logger log = LoggerFactory.getLogger(HostMounter.class);

    /**
     * How long an unmount that the kernel answers EBUSY is tried again: a reader in the target
     * (a backup's walk, a stats tool, a shell that has it open) usually lets go within it.
     */
    static final Duration BUSY_RETRIES = Duration.ofSeconds(5);

    private static final Duration FIRST_PAUSE = Duration.ofMillis(20);
    private static final Duration LONGEST_PAUSE = Duration.ofMillis(500);

    private final MountCalls calls;
    private final MountTable table;
    private final Duration busyRetries;

    public HostMounter(BlockingCalls blocking, MountTable table) {
        this(new LinuxMountCalls(blocking), table, BUSY_RETRIES);
    }

    /**
     * Binds this room's own system calls ahead of the first mount, which would otherwise wait for it
     * (docs/performance-node.md).
     */
    public static void prepareCalls() {
        MountSyscalls.prepare();
    }

    HostMounter(MountCalls calls, MountTable table) {
        this(calls, table, BUSY_RETRIES);
    }

    HostMounter(MountCalls calls, MountTable table, Duration busyRetries) {
        this.calls = calls;
        this.table = table;
        this.busyRetries = busyRetries;
    }

    @Override
    public void mount(Path device, Path target, FsType type, List<String> options) {
        MountFlags flags = MountFlags.of(options);
        log.info(
                "mounting {} ({}{}) at {}",
                device,
                type,
                options.isEmpty() ? "" : " " + String.join(",", options),
                target);
        calls.mount(
                device.toString(), target, MountCalls.TargetKind.DIRECTORY, type.fsName(), flags.flags(), flags.data());
    }

    @Override
    public void bind(Path source, Path target, boolean readOnly, List<String> options) {
        MountCalls.TargetKind kind = kindOf(source);
        // Routine for every publish, which the call's own log line records: debug, as mount-utils does.
        log.debug("binding {} at {}{}", source, target, readOnly ? " read-only" : "");
        long flags = MountFlags.of(options).flags() | (readOnly ? MountSyscalls.MS_RDONLY : 0);
        if (flags != 0 && calls.atomicBinds()) {
            calls.bindWithFlags(source.toString(), target, kind, flags);
            return;
        }
        calls.mount(source.toString(), target, kind, null, MountSyscalls.MS_BIND, null);
        if (flags == 0) {
            return;
        }
        TestKillPoint.reached("publish.before-flags");
        // A bind takes the source's flags; read-only and the other per-mount flags need a remount.
        // A kill between the two leaves the bind without them: bindsAtomically() says so.
        try {
            calls.remountBind(target, kind, flags);
        } catch (RuntimeException e) {
            try {
                table.at(target).ifPresent(mount -> unmount(mount, false));
            } catch (RuntimeException cleanup) {
                e.addSuppressed(cleanup);
            }
            throw e;
        }
    }

    @Override
    public boolean bindsAtomically() {
        return calls.atomicBinds();
    }

    @Override
    public void setBindFlags(Path target, boolean readOnly, List<String> options) {
        long flags = MountFlags.of(options).flags() | (readOnly ? MountSyscalls.MS_RDONLY : 0);
        log.info("setting the flags of the bind at {}{}", target, readOnly ? " (read-only)" : "");
        calls.remountBind(target, kindOf(target), flags);
    }

    private static MountCalls.TargetKind kindOf(Path path) {
        return Files.isDirectory(path, LinkOption.NOFOLLOW_LINKS)
                ? MountCalls.TargetKind.DIRECTORY
                : MountCalls.TargetKind.FILE;
    }

    @Override
    public List<MountInfo> unmount(MountInfo mount, boolean corrupted) {
        return unmount(mount, corrupted, false);
    }

    @Override
    public List<MountInfo> unmountTop(List<MountInfo> stack, boolean corrupted) {
        return unmount(stack.getLast(), corrupted, stack.size() == 1);
    }

    /** {@code alone}: the only mount at its mount point when the caller read the table. */
    private List<MountInfo> unmount(MountInfo mount, boolean corrupted, boolean alone) {
        Path target = mount.mountPoint();
        log.debug("unmounting {} ({})", target, mount.source());
        int errno = calls.unmount(target, false);
        if (errno == Libc.EBUSY && !corrupted) {
            errno = unmountOnceFree(target);
        }
        if (errno == 0 && alone) {
            return List.of(); // umount2 took the topmost mount there, which was the only one
        }
        List<MountInfo> left = table.allAt(target);
        if (errno != 0 && corrupted && isStill(mount, left)) {
            errno = calls.unmount(target, true);
            left = table.allAt(target);
        }
        if (isStill(mount, left) && errno == Libc.EBUSY) {
            // Something on this node has a file open there, or its working directory: kubelet
            // tries again, and once it lets go the unmount succeeds.
            throw StorageException.busy(
                    "%s is still mounted: target is busy (a process on this node has a file or its working "
                            + "directory there) after %d s of tries; retry once it lets go",
                    target, busyRetries.toSeconds());
        }
        if (isStill(mount, left)) {
            throw StorageException.internal(
                    "%s is still mounted after umount%s",
                    target,
                    errno == 0
                            ? " (mount " + mount.mountId() + " of " + mount.source() + ")"
                            : ": " + (errno == Libc.EBUSY ? "target is busy" : Libc.strerror(errno)));
        }
        return left;
    }

    /** umount2 tried again, with growing pauses, while the kernel says EBUSY and the time allows; the last errno. */
    private int unmountOnceFree(Path target) {
        long deadline = System.nanoTime() + busyRetries.toNanos();
        Duration pause = FIRST_PAUSE;
        int errno = Libc.EBUSY;
        while (errno == Libc.EBUSY && System.nanoTime() < deadline) {
            try {
                Thread.sleep(Duration.ofNanos(Math.min(pause.toNanos(), Math.max(0, deadline - System.nanoTime()))));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return errno;
            }
            pause = pause.multipliedBy(2).compareTo(LONGEST_PAUSE) > 0 ? LONGEST_PAUSE : pause.multipliedBy(2);
            errno = calls.unmount(target, false);
        }
        if (errno != Libc.EBUSY) {
            log.info("{} was busy, and unmounted once it was not", target);
        }
        return errno;
    }

    /** The kernel recycles mount IDs at once, so the ID alone could name somebody else's new mount. */
    private static boolean isStill(MountInfo mount, List<MountInfo> atItsMountPoint) {
        return atItsMountPoint.stream()
                .anyMatch(m -> m.mountId() == mount.mountId() && m.device().equals(mount.device()));
    }
}
