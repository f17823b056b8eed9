package dev.blockpool.host.loops;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.host.mounts.DeviceNumber;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Whether a loop device is bound to a pool image, as the pool's filesystem is mounted anew under it. */
class ImageIdentitiesTest {

    private static final Path IMAGE = Path.of("/pool/volumes/vol-a.img");
    private static final DeviceNumber FIRST_MOUNT = new DeviceNumber(0, 61);
    private static final DeviceNumber SECOND_MOUNT = new DeviceNumber(0, 75);

    /** The pool's files as a stat shows them now. */
    private final Map<Path, FileId> files = new HashMap<>();

    private DeviceNumber poolDevice = FIRST_MOUNT;
    /** The filesystems mounted now, by device. */
    private final Set<DeviceNumber> mounted = new HashSet<>(Set.of(FIRST_MOUNT));

    private final ImageIdentities images = new ImageIdentities(new ImageIdentities.PoolFiles() {
        @Override
        public Optional<FileId> idOf(Path image) {
            return Optional.ofNullable(files.get(image));
        }

        @Override
        public DeviceNumber filesystemOf(Path directory) {
            return poolDevice;
        }

        @Override
        public boolean isMounted(DeviceNumber device) {
            return mounted.contains(device);
        }
    });

    private static LoopDevice boundTo(FileId backing, Set<LoopDevice.Flag> flags) {
        return new LoopDevice("loop3", Path.of("/dev/loop3"), new DeviceNumber(7, 3), IMAGE, backing, flags, 1 << 20);
    }

    @Test
    void aDeviceBoundBeforeThePoolWasMountedAnewIsStillBoundToItsImage() {
        LoopDevice loop = boundTo(new FileId(FIRST_MOUNT, 4242), Set.of());

        // The FUSE client restarted, and the driver with it (so nothing of the first mount is known):
        // the same file, its inode kept by the server, on a new device number.
        poolDevice = SECOND_MOUNT;
        mounted.remove(FIRST_MOUNT);
        mounted.add(SECOND_MOUNT);
        files.put(IMAGE, new FileId(SECOND_MOUNT, 4242));

        assertThat(images.isBoundTo(loop, IMAGE))
                .as("found by unstage, to be detached")
                .isTrue();
    }

    @Test
    void aDeviceBoundThroughAnotherMountOfTheShareStillMountedIsNotThisMountsImage() {
        // Two mounts of one share on one host (two nodes of a test on one machine): the same inode
        // under the same name, and the other mount still there.
        LoopDevice loop = boundTo(new FileId(FIRST_MOUNT, 4242), Set.of());
        poolDevice = SECOND_MOUNT;
        mounted.add(SECOND_MOUNT);
        files.put(IMAGE, new FileId(SECOND_MOUNT, 4242));

        assertThat(images.isBoundTo(loop, IMAGE)).isFalse();
    }

    @Test
    void anotherFileUnderTheImagesNameIsNotTheImage() {
        poolDevice = SECOND_MOUNT;
        files.put(IMAGE, new FileId(SECOND_MOUNT, 9000));

        assertThat(images.isBoundTo(boundTo(new FileId(FIRST_MOUNT, 4242), Set.of()), IMAGE))
                .isFalse();
        assertThat(images.isBoundTo(
                        boundTo(new FileId(FIRST_MOUNT, 9000), Set.of(LoopDevice.Flag.BACKING_FILE_DELETED)), IMAGE))
                .as("the same inode number of a file deleted on another filesystem")
                .isFalse();
    }
}
