package dev.blockpool.host.loops;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.LastKept;
import dev.blockpool.common.StorageException;
import dev.blockpool.host.mounts.DeviceNumber;
import dev.blockpool.host.mounts.MountTable;
import dev.blockpool.host.mounts.ProcMountTable;
import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * The one rule for whether a loop device is bound to a pool image: the device and inode of its
 * backing file are those of the image in the pool ({@link FileId}), or, once the pool's filesystem
 * was mounted anew and numbered anew (the old one mounted nowhere), its inode and name are. An image the pool no longer
 * has (deleted, or deleted and made anew, while a device still holds it) is recognised by the
 * device's own account: its backing file was deleted, had the image's name and was on the pool's
 * filesystem.
 *
 * <p>Every node call asks this of the mounts it looks at, so each image's identity is kept once
 * read, and the pool is asked again only when a device does not match it: a look into the pool
 * may hang on a dead NFS server, and a volume's stats and health must still answer then.
 */
public final class ImageIdentities {

    /** The node's deadline for a look at a filesystem that may not answer. */
    private static final Duration DEADLINE = Duration.ofSeconds(5);
    /** Identities kept: every image a node has in use, many times over. */
    private static final int KEPT = 4096;

    /** How the pool's files are looked at. */
    interface PoolFiles {
        /** The image's identity now; empty when the pool has no such file. */
        Optional<FileId> idOf(Path image);

        /** The device of the filesystem holding {@code directory}. */
        DeviceNumber filesystemOf(Path directory);

        /** Whether a filesystem of this device is mounted anywhere this process sees. */
        boolean isMounted(DeviceNumber device);
    }

    /** The kernel's own table: read without a look at any filesystem, so it cannot hang. */
    private static final MountTable MOUNT_TABLE = new ProcMountTable();

    private final PoolFiles pool;
    private final Map<Path, FileId> known = LastKept.map(KEPT);
    private final Map<BindingKey, Binding> bindings = LastKept.map(KEPT);

    private record BindingKey(Path image, DeviceNumber number) {}

    /**
     * A device found bound to an image, as sysfs showed it then. While sysfs shows it so (same
     * number, same printed path, not deleted), it is still that binding: a device is bound anew
     * only after a detach, and a new image at that path would have left the old one deleted.
     */
    record Binding(LoopDevice device) {
        boolean isStill(LoopDevice now) {
            return now.name().equals(device.name())
                    && now.backingFile().equals(device.backingFile())
                    && now.backingFileDeleted() == device.backingFileDeleted();
        }
    }

    /** Looks at the pool's files on the threads of {@code blocking}, each within the node's deadline. */
    public ImageIdentities(BlockingCalls blocking) {
        this(new PoolFiles() {
            @Override
            public Optional<FileId> idOf(Path image) {
                return blocking.call(DEADLINE, "looking at " + image, () -> {
                    try {
                        return Optional.of(FileId.of(image));
                    } catch (NoSuchFileException e) {
                        return Optional.empty();
                    } catch (IOException e) {
                        throw StorageException.io(e, "cannot look at %s", image);
                    }
                });
            }

            @Override
            public boolean isMounted(DeviceNumber device) {
                return !MOUNT_TABLE.ofDevice(device).isEmpty();
            }

            @Override
            public DeviceNumber filesystemOf(Path directory) {
                return blocking.call(DEADLINE, "looking at " + directory, () -> {
                    try {
                        return FileId.deviceOf(directory);
                    } catch (IOException e) {
                        throw StorageException.io(e, "cannot look at %s", directory);
                    }
                });
            }
        });
    }

    ImageIdentities(PoolFiles pool) {
        this.pool = pool;
    }

    /** Whether {@code loop} is bound to {@code image}, a path of the pool. */
    public boolean isBoundTo(LoopDevice loop, Path image) {
        boolean bound = decide(loop, image);
        if (bound) {
            bindings.put(new BindingKey(image, loop.number()), new Binding(loop));
        }
        return bound;
    }

    /** {@code loop} was bound to {@code image} just now, by this process: its backing file is the image. */
    void attached(LoopDevice loop, Path image) {
        known.put(image, loop.backingFileId());
        bindings.put(new BindingKey(image, loop.number()), new Binding(loop));
    }

    /** The device with this number as it was last found bound to the image, if it was: for answers that must not wait. */
    Optional<Binding> knownBinding(Path image, DeviceNumber number) {
        return Optional.ofNullable(bindings.get(new BindingKey(image, number)));
    }

    private boolean decide(LoopDevice loop, Path image) {
        // The names of a path survive a change of mount namespace, only its beginning does not.
        if (!image.getFileName().equals(loop.backingFile().getFileName())) {
            return false;
        }
        if (loop.backingFileId().equals(known.get(image))) {
            return true;
        }
        Optional<FileId> now = pool.idOf(image);
        now.ifPresentOrElse(id -> known.put(image, id), () -> known.remove(image));
        if (now.isPresent() && now.get().equals(loop.backingFileId())) {
            return true;
        }
        // A pool mounted anew (its FUSE client restarted, its NFS share remounted) has a new device
        // number, while a device bound before keeps the old one; the server's inode number stays.
        // Same name, same inode, not deleted since, and that old filesystem mounted nowhere any
        // more: the same image, which unstage must still find. One still mounted is another mount
        // of the share, and the device is that mount's.
        if (now.isPresent()
                && !loop.backingFileDeleted()
                && now.get().inode() == loop.backingFileId().inode()
                && !pool.isMounted(loop.backingFileId().device())) {
            return true;
        }
        return loop.backingFileDeleted() && loop.backingFileId().device().equals(pool.filesystemOf(image.getParent()));
    }
}
