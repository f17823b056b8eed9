package dev.blockpool.host.cgroups;

import dev.blockpool.common.IoLimits;
import dev.blockpool.host.mounts.DeviceNumber;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * The kernel's I/O throttle in the cgroups of one pod: what the pod's containers may read from and
 * write to one block device per second.
 */
public interface PodCgroupCalls {

    /**
     * Limits the I/O of the pod with this UID on {@code device} to {@code limits} ({@link
     * IoLimits#NONE} lifts a limit set before), in every cgroup of the pod the kernel counts its
     * containers' I/O in. Returns the cgroups that now have the limits; empty when the pod has no
     * cgroup on this host (not made yet, or gone).
     */
    List<Path> limit(String podUid, DeviceNumber device, IoLimits limits);

    /**
     * Waits at most {@code limit} for a cgroup made below the cgroup of a pod limited here, where
     * the kernel counts a new container's I/O apart from its pod's (cgroup v1); true when one was.
     * Where a pod's limits govern the containers it starts later (cgroup v2), none is ever worth
     * waking for.
     */
    default boolean awaitNewCgroup(Duration limit) throws InterruptedException {
        Thread.sleep(limit);
        return false;
    }
}
