package dev.blockpool.host;

import dev.blockpool.common.HealthProblem;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * NodeGetVolumeHealth on the host: what is wrong with a volume where this node uses it, from the
 * mount table and loop sysfs as they are now. Every mount of the image through its loop
 * devices is looked at, and the paths the caller names, which may still show a mount whose
 * device has gone.
 */
public final class MountHealth {

    private final LoopAttachments loops;
    private final MountTable table;

    public MountHealth(LoopAttachments loops, MountTable table) {
        this.loops = loops;
        this.table = table;
    }

    /** The problems of the image's mounts and of those at {@code paths}; empty when none is known. */
    public List<HealthProblem> problems(Path image, List<Path> paths) {
        Set<MountInfo> mounts = new LinkedHashSet<>(loops.usersOf(image));
        paths.forEach(path -> table.at(path).ifPresent(mounts::add));
        List<HealthProblem> problems = new ArrayList<>();
        for (MountInfo mount : mounts) {
            // one look at the device: a concurrent unstage may detach it between two
            Optional<LoopDevice> device = loops.loopOf(mount);
            MountOwner owner = LoopAttachments.ownerOf(mount, image, device);
            if (owner == MountOwner.OTHER) {
                continue;
            }
            if (owner == MountOwner.BROKEN || device.isEmpty()) {
                problems.add(HealthProblem.inaccessible("LoopDeviceDetached",
                        "the loop device behind " + mount.mountPoint() + " is gone"));
                continue;
            }
            LoopDevice loop = device.get();
            if (loop.backingFileDeleted()) {
                problems.add(HealthProblem.dataLoss("ImageDeleted", "the image " + image
                        + " was deleted while " + loop.device() + " at " + mount.mountPoint() + " still uses it"));
            } else if (loop.autoclear()) {
                problems.add(HealthProblem.inaccessible("LoopDeviceDetached", loop.device()
                        + " was detached while in use at " + mount.mountPoint()));
            }
        }
        return problems;
    }
}
