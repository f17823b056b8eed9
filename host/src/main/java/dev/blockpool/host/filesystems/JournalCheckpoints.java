package dev.blockpool.host.filesystems;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import dev.blockpool.host.loops.LoopAttachments;
import dev.blockpool.host.mounts.MountInfo;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

/**
 * Writes a volume's ext4 journal home: EXT4_IOC_CHECKPOINT (Linux 5.13) copies every metadata
 * block the journal holds to its place in the filesystem. In a sparse image that place may be a
 * hole, which takes a block of the pool when written; done while the pool has room, it leaves
 * nothing that a full pool could refuse later, when a refused metadata write aborts the journal
 * and leaves the filesystem needing repair. The call waits for the running transaction, not for
 * the file data, so it is brief; it runs on the threads for calls that can hang, with a deadline.
 */
public final class JournalCheckpoints {

    /** _IOW('f', 43, __u32): the argument points to flags, none of which is asked here. */
    private static final Libc.Ioctl EXT4_IOC_CHECKPOINT = new Libc.Ioctl("EXT4_IOC_CHECKPOINT", 0x4004662BL);

    private static final Duration DEADLINE = Duration.ofSeconds(30);

    private final LoopAttachments loops;
    private final BlockingCalls blocking;

    public JournalCheckpoints(LoopAttachments loops, BlockingCalls blocking) {
        this.loops = loops;
        this.blocking = blocking;
    }

    /**
     * The journal of the ext4 filesystem on {@code image}, written home through one of its
     * writable mounts on this node; false when it has none (not staged here, a raw block volume,
     * XFS, read-only). Unsupported by the kernel is an error that says so.
     */
    public boolean checkpoint(Path image) {
        Optional<Path> mountPoint = loops.usersOf(image).stream()
                .filter(mount -> mount.fsType().equals("ext4")
                        && !mount.readOnly()
                        && !mount.superOptions().contains("ro")
                        && !LoopAttachments.isDeviceNodeBind(mount))
                .map(MountInfo::mountPoint)
                .findFirst();
        if (mountPoint.isEmpty()) {
            return false;
        }
        return blocking.call(
                DEADLINE,
                "EXT4_IOC_CHECKPOINT of " + mountPoint.get(),
                () -> MountPointCalls.onMountPoint(mountPoint.get(), fd -> {
                    try (Arena arena = Arena.ofConfined()) {
                        Libc.ioctl(fd, EXT4_IOC_CHECKPOINT, arena.allocate(ValueLayout.JAVA_INT));
                        return true;
                    } catch (Libc.ErrnoException e) {
                        throw StorageException.internal(
                                "cannot write the journal of the filesystem mounted at %s home%s: %s",
                                mountPoint.get(),
                                e.errno() == Libc.ENOTTY || e.errno() == Libc.EOPNOTSUPP
                                        ? " (EXT4_IOC_CHECKPOINT needs Linux 5.13 or newer)"
                                        : "",
                                e.getMessage());
                    }
                }));
    }
}
