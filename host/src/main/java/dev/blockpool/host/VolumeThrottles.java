package dev.blockpool.host;

import dev.blockpool.common.IoLimits;
import dev.blockpool.host.cgroups.PodCgroupCalls;
import dev.blockpool.host.loops.LoopAttachments;
import dev.blockpool.host.loops.LoopDevice;
import dev.blockpool.host.mounts.DeviceNumber;
import dev.blockpool.host.mounts.MountInfo;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A volume's I/O limits on this host: set in the cgroups of each pod the volume is published to,
 * on the loop device that pod reads and writes. Which pods those are, and which device, comes from
 * the mount table and loop sysfs as they are now (a publish target names its pod), never from
 * memory, so a restarted driver sets the same.
 */
public final class VolumeThrottles {

    private final LoopAttachments loops;
    private final PodCgroupCalls cgroups;

    public VolumeThrottles(LoopAttachments loops, PodCgroupCalls cgroups) {
        this.loops = loops;
        this.cgroups = cgroups;
    }

    /** One pod's use of a volume: where it is published to the pod, and the device the pod's I/O goes to. */
    public record PodUse(Path target, String podUid, DeviceNumber device) {}

    /**
     * Every publish of the image to a pod on this host: a file system's bind, or a raw block
     * device's (a read-only one has a device of its own).
     */
    public List<PodUse> podUses(Path image) {
        List<PodUse> uses = new ArrayList<>();
        for (LoopDevice device : loops.boundTo(image)) {
            for (MountInfo mount : loops.usersOf(device)) {
                KubeletPaths.podUidOf(mount.mountPoint())
                        .ifPresent(uid -> uses.add(new PodUse(mount.mountPoint(), uid, device.number())));
            }
        }
        return uses;
    }

    /** Limits every pod the image is published to; returns the cgroups that have the limits now. */
    public List<Path> apply(Path image, IoLimits limits) {
        return apply(podUses(image), limits);
    }

    /** Limits the pod the image is published to at {@code target}, as NodePublishVolume made it. */
    public List<Path> applyAt(Path image, Path target, IoLimits limits) {
        return apply(
                podUses(image).stream()
                        .filter(use -> use.target().equals(target))
                        .toList(),
                limits);
    }

    /**
     * Waits at most {@code limit} for a container made in a limited pod whose cgroup the limits do
     * not reach until they are set there too (cgroup v1); true when one was.
     */
    public boolean awaitNewContainer(Duration limit) throws InterruptedException {
        return cgroups.awaitNewCgroup(limit);
    }

    private List<Path> apply(List<PodUse> uses, IoLimits limits) {
        List<Path> limited = new ArrayList<>();
        for (PodUse use : uses) {
            limited.addAll(cgroups.limit(use.podUid(), use.device(), limits));
        }
        return limited;
    }
}
