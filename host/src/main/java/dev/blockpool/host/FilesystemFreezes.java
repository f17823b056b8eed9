package dev.blockpool.host;

import dev.blockpool.common.BlockingCalls;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Freezes and thaws the file systems this host has mounted from a volume's image: one freeze
 * per file system (its staging mount and every bind of it share one super block), found in the
 * mount table through the image's loop devices. A raw block volume, or one not staged here, has
 * none: nothing is frozen.
 */
public final class FilesystemFreezes {

    private final LoopAttachments loops;
    private final FreezeCalls calls;

    FilesystemFreezes(LoopAttachments loops, FreezeCalls calls) {
        this.loops = loops;
        this.calls = calls;
    }

    /** On this host: the freeze ioctls on the threads of {@code blocking}. */
    public static FilesystemFreezes onThisHost(LoopAttachments loops, BlockingCalls blocking) {
        return new FilesystemFreezes(loops, new LinuxFreezeCalls(blocking));
    }

    /**
     * Freezes every file system mounted from the image and answers where; on a failure, thaws
     * those it froze before it throws.
     */
    public List<Path> freeze(Path image) {
        List<Path> frozen = new ArrayList<>();
        try {
            for (Path mountPoint : fileSystemsOf(image)) {
                calls.freeze(mountPoint);
                frozen.add(mountPoint);
            }
            return frozen;
        } catch (RuntimeException failure) {
            frozen.forEach(calls::thaw);
            throw failure;
        }
    }

    /** Thaws every file system mounted from the image; one not frozen is left as it is. */
    public void thaw(Path image) {
        fileSystemsOf(image).forEach(calls::thaw);
    }

    /** One mount point per file system on the image's loop devices. */
    private List<Path> fileSystemsOf(Path image) {
        Map<DeviceNumber, Path> byDevice = new LinkedHashMap<>();
        for (MountInfo mount : loops.usersOf(image)) {
            if (!LoopAttachments.isDeviceNodeBind(mount)) {
                byDevice.putIfAbsent(mount.device(), mount.mountPoint());
            }
        }
        return List.copyOf(byDevice.values());
    }
}
