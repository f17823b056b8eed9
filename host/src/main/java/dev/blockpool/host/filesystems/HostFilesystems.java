package dev.blockpool.host.filesystems;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.FilesystemAnswer;
import dev.blockpool.common.FsType;
import dev.blockpool.common.HostTools;
import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import dev.blockpool.host.loops.LoopDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** {@link Filesystems} through blkid, mkfs, e2fsck and resize2fs/xfs_growfs, and statfs(2). */
public final class HostFilesystems implements Filesystems {

    /** The program this class runs for every volume: a node is ready only where it is found. */
    public static final List<String> TOOLS = List.of("blkid");
    /**
     * The programs each filesystem needs: a node that lacks some serves the other filesystem, and
     * refuses what needs a missing one, naming it and its package.
     */
    public static final Map<FsType, List<String>> FILESYSTEM_TOOLS = Map.of(
            FsType.EXT4, List.of("mkfs.ext4", "e2fsck", "resize2fs"),
            FsType.XFS, List.of("mkfs.xfs", "xfs_growfs"));

    private static final Logger log = LoggerFactory.getLogger(HostFilesystems.class);
    private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(30);
    private static final int PROBE_READ_BYTES = 64 * 1024;
    private static final Duration FORMAT_TIMEOUT = Duration.ofMinutes(10);
    private static final Duration CHECK_TIMEOUT = Duration.ofMinutes(30);
    /** One directory per mounted ext4 filesystem, named after its device. */
    private static final Path EXT4_SYSFS = Path.of("/sys/fs/ext4");

    private final CommandRunner runner;
    private final BlockingCalls blocking;
    private final HostTools tools;

    /** The programs found in this host's search path. */
    public HostFilesystems(CommandRunner runner, BlockingCalls blocking) {
        this(runner, blocking, HostTools.onThisHost());
    }

    /** The programs found by {@code tools}: one it does not find is a PRECONDITION naming its package. */
    public HostFilesystems(CommandRunner runner, BlockingCalls blocking, HostTools tools) {
        this.runner = runner;
        this.blocking = blocking;
        this.tools = tools;
    }

    /** Runs the command when its program is installed; PRECONDITION naming the program and its package when not. */
    private CommandRunner.Result run(Duration timeout, List<String> command) {
        tools.require(command.getFirst());
        return runner.run(timeout, command);
    }

    @Override
    public Probe probe(Path device) {
        // -p: low-level probe of the device itself, bypassing the blkid cache.
        CommandRunner.Result result = run(PROBE_TIMEOUT, List.of("blkid", "-p", "-o", "export", device.toString()));
        return switch (result.exitCode()) {
            case 0 -> Probe.parseExport(result.stdout());
            // Nothing identified, but blkid says the same of a device it could not open at all:
            // "empty" only once the device was opened and its first blocks read.
            case 2 -> requireReadable(device);
            // 8: ambivalent result (several signatures); anything else: the probe failed.
            default ->
                throw StorageException.internal(
                        "cannot tell what is on %s, so it will not be formatted: %s", device, result.describe());
        };
    }

    private static Probe requireReadable(Path device) {
        try (FileChannel channel = FileChannel.open(device, StandardOpenOption.READ)) {
            ByteBuffer head = ByteBuffer.allocate(PROBE_READ_BYTES);
            while (head.hasRemaining() && channel.read(head) >= 0) {
                // read the head: where every filesystem and partition table keeps its signature
            }
            return Probe.EMPTY;
        } catch (IOException e) {
            throw StorageException.io(
                    e, "cannot read %s, so it cannot be told empty and will not be formatted", device);
        }
    }

    @Override
    public void format(Path device, FsType type) {
        // No force flags: if mkfs finds a signature blkid missed, it refuses instead of overwriting.
        List<String> command = switch (type) {
            case EXT4 -> List.of("mkfs.ext4", "-q", device.toString());
            case XFS -> List.of("mkfs.xfs", "-q", device.toString());
        };
        tools.require(command.getFirst());
        log.info("formatting {} as {}", device, type);
        runner.runChecked(FORMAT_TIMEOUT, command);
    }

    @Override
    public void check(Path device, FsType type) {
        switch (type) {
            case EXT4 -> {
                // -p: repair what is safe without questions. 0 clean, 1 fixed, 2 fixed (reboot
                // advised, meaningless for an unmounted data volume); 4 and up: not usable.
                CommandRunner.Result result = run(CHECK_TIMEOUT, List.of("e2fsck", "-p", device.toString()));
                if (result.exitCode() > 2) {
                    throw StorageException.internal(
                            "the ext4 filesystem on %s needs manual repair: %s", device, result.describe());
                }
            }
            case XFS -> {
                // Nothing to run: mounting replays the log, which is what an unclean shutdown
                // leaves behind, and xfs_repair -n reports a dirty log as corruption (a stage
                // would fail forever). The kernel verifies xfs metadata as it reads it.
            }
        }
    }

    @Override
    public boolean growMounted(Path device, Path mountPoint, FsType type) {
        List<String> command = switch (type) {
            case EXT4 -> List.of("resize2fs", device.toString());
            case XFS -> List.of("xfs_growfs", mountPoint.toString());
        };
        tools.require(command.getFirst());
        log.info("growing the {} filesystem on {} mounted at {}", type, device, mountPoint);
        CommandRunner.Result result = runner.run(FORMAT_TIMEOUT, command);
        if (result.ok()) {
            return true;
        }
        // The kernel's online-resize ioctls need CAP_SYS_RESOURCE (ext4) / CAP_SYS_ADMIN (xfs).
        // resize2fs asks before it changes anything, so a refused ext4 is as it was; the next
        // stage grows it unmounted, which needs no privilege beyond the device's.
        boolean refused = result.stderr().contains("Permission denied");
        if (refused && type == FsType.EXT4) {
            log.warn(
                    "the kernel refuses to grow the ext4 filesystem on {} while it is mounted at {} (online growth"
                            + " needs CAP_SYS_RESOURCE); it grows at the volume's next stage",
                    device,
                    mountPoint);
            return false;
        }
        String hint = refused ? " (online growth needs the driver to run with CAP_SYS_ADMIN)" : "";
        throw StorageException.internal(
                "cannot grow the %s filesystem mounted at %s: %s%s", type, mountPoint, result.describe(), hint);
    }

    @Override
    public void repairInterruptedGrowth(Path device, Path marker) {
        if (!Files.exists(marker)) {
            return;
        }
        log.warn("repairing the ext4 filesystem on {}, whose growth was cut short ({})", device, marker);
        CommandRunner.Result repaired = run(CHECK_TIMEOUT, List.of("e2fsck", "-f", "-y", device.toString()));
        if (repaired.exitCode() > 2) {
            throw StorageException.internal(
                    "the ext4 filesystem on %s, whose growth was cut short, needs manual repair: %s",
                    device, repaired.describe());
        }
        removeDurably(marker);
    }

    @Override
    public boolean growUnmounted(LoopDevice device, FsType type, Path marker) {
        if (type != FsType.EXT4) {
            return false; // xfs grows only while mounted, which the kernel allows the driver
        }
        Ext4Superblock superblock = blocking.call(
                PROBE_TIMEOUT,
                "reading the ext4 superblock of " + device.device(),
                () -> Ext4Superblock.read(device.device()));
        if (!superblock.smallerThan(device.sizeBytes())) {
            return false;
        }
        log.info(
                "growing the ext4 filesystem on {} from {} to {} bytes before it is mounted",
                device.device(),
                superblock.sizeBytes(),
                device.sizeBytes());
        // resize2fs grows only a filesystem checked in full since its last mount.
        CommandRunner.Result checked =
                run(CHECK_TIMEOUT, List.of("e2fsck", "-f", "-p", device.device().toString()));
        if (checked.exitCode() > 2) {
            throw StorageException.internal(
                    "the ext4 filesystem on %s needs manual repair before it can grow: %s",
                    device.device(), checked.describe());
        }
        updateDurably(marker, true); // on disk before the first block resize2fs writes
        CommandRunner.Result grown =
                run(FORMAT_TIMEOUT, List.of("resize2fs", device.device().toString()));
        if (!grown.ok()) {
            throw StorageException.internal(
                    "cannot grow the ext4 filesystem on %s: %s", device.device(), grown.describe());
        }
        removeDurably(marker);
        return true;
    }

    private static void removeDurably(Path marker) {
        updateDurably(marker, false);
    }

    /** Creates or removes the (empty) file and flushes its directory. */
    private static void updateDurably(Path marker, boolean present) {
        try {
            if (present) {
                Files.newByteChannel(marker, StandardOpenOption.CREATE, StandardOpenOption.WRITE)
                        .close();
            } else {
                Files.deleteIfExists(marker);
            }
            try (FileChannel directory = FileChannel.open(marker.getParent(), StandardOpenOption.READ)) {
                directory.force(true);
            }
        } catch (IOException e) {
            throw StorageException.io(e, "cannot %s %s", present ? "create" : "remove", marker);
        }
    }

    @Override
    public FsStats stats(Path path) {
        // On the calling thread: asked only of a volume's own ext4 or xfs (VolumeStats checks the
        // mount's device first), whose statfs answers from counters it keeps in memory, also when
        // the pool under the volume does not answer.
        int fd;
        try {
            fd = Libc.openPathNoSymlinks(path.toString(), false);
        } catch (Libc.ErrnoException e) {
            if (e.errno() == Libc.ENOENT) { // unpublished and removed since its mount was read
                throw StorageException.notFound("%s is gone", path);
            }
            throw StorageException.internal("cannot open %s to read its usage: %s", path, e.getMessage());
        }
        try {
            return FsStats.of(Libc.fstatfs(fd));
        } catch (Libc.ErrnoException e) {
            throw StorageException.internal("cannot read the usage of %s: %s", path, e.getMessage());
        } finally {
            Libc.close(fd);
        }
    }

    @Override
    public FilesystemAnswer answer(Path mountPoint) {
        return FilesystemAnswer.of(blocking, mountPoint);
    }

    @Override
    public Optional<RecordedErrors> recordedErrors(LoopDevice device) {
        Path dir = EXT4_SYSFS.resolve(device.name());
        try {
            long count =
                    Long.parseLong(Files.readString(dir.resolve("errors_count")).strip());
            if (count == 0) {
                return Optional.empty();
            }
            long first = Long.parseLong(
                    Files.readString(dir.resolve("first_error_time")).strip());
            return Optional.of(new RecordedErrors(
                    count,
                    first > 0 ? Optional.of(Instant.ofEpochSecond(first)) : Optional.empty(),
                    Files.readString(dir.resolve("first_error_func")).strip()));
        } catch (NoSuchFileException e) {
            return Optional.empty(); // no ext4 mounted from it (xfs, or unmounted just now)
        } catch (IOException | NumberFormatException e) {
            log.warn("cannot read the ext4 error record of {} in {}: {}", device.device(), dir, e.getMessage());
            return Optional.empty();
        }
    }
}
