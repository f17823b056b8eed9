package dev.blockpool.node;

import dev.blockpool.common.IoLimits;
import dev.blockpool.common.OperationLocks;
import dev.blockpool.common.StorageException;
import dev.blockpool.host.NodeHost;
import dev.blockpool.pool.NodeIoLimits;
import dev.blockpool.pool.Volume;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The I/O limits of the volumes this node publishes, set in the cgroups of the pods it publishes
 * them to: by NodePublishVolume for its pod, at once by ControllerModifyVolume where the controller
 * is served beside the node, and by {@link #look} for every published volume, from its record and
 * the mount table: every {@link #LOOK_EVERY}, and at once when a limited pod starts a container
 * (cgroup v1 limits each container's cgroup; see {@code VolumeThrottles#awaitNewContainer}). The
 * look is what brings a limit changed by a controller on another node (a shared pool), a container
 * started after the publish and a restarted driver to what the records say.
 */
public final class PublishedIoLimits implements NodeIoLimits {

    private static final Logger log = LoggerFactory.getLogger(PublishedIoLimits.class);

    /** How often the node looks: the longest a change made on another node goes unapplied. */
    public static final Duration LOOK_EVERY = Duration.ofSeconds(10);

    private final NodeHost host;
    private final VolumeCatalog volumes;
    private final OperationLocks locks;

    public PublishedIoLimits(NodeHost host, VolumeCatalog volumes, OperationLocks locks) {
        this.host = host;
        this.volumes = volumes;
        this.locks = locks;
    }

    /** ControllerModifyVolume changed the volume's limits: every pod here has them now (held under its lock). */
    @Override
    public void apply(Volume volume) {
        List<Path> cgroups = host.throttles().apply(volumes.imageFor(volume.id()), volume.ioLimits());
        if (!cgroups.isEmpty()) {
            log.info(
                    "volume {}: {} in {} cgroups of its pods on this node",
                    volume.id(),
                    volume.ioLimits(),
                    cgroups.size());
        }
    }

    /**
     * The pod published at {@code target} gets the volume's limits (held under the volume's lock).
     * Its cgroup has none yet, so a volume without limits has nothing to set.
     */
    void applyAt(NodeVolume volume, Path target) {
        if (volume.ioLimits().none()) {
            return;
        }
        List<Path> cgroups = host.throttles().applyAt(volume.image(), target, volume.ioLimits());
        if (cgroups.isEmpty()) {
            log.warn(
                    "volume {} published at {}: the pod has no cgroup on this node yet; its I/O limits are set at the "
                            + "node's next look, within {}",
                    volume.id(),
                    target,
                    LOOK_EVERY);
        }
    }

    /**
     * Sets the limits of every volume published to a pod on this node, as its record has them, in
     * the cgroups of its pods. A volume a call holds is left to the next look; one that fails is
     * logged, and the others are still set.
     */
    public void look() {
        for (NodeCensus.BoundVolume bound : NodeCensus.boundVolumes(host, volumes)) {
            if (host.throttles().podUses(bound.image()).isEmpty()) {
                continue; // staged only: its record is not read
            }
            try {
                locks.withLock(
                        () -> {
                            Optional<IoLimits> limits = volumes.find(bound.id()).map(NodeVolume::ioLimits);
                            limits.ifPresent(l -> host.throttles().apply(bound.image(), l));
                        },
                        volumes.lockKey(bound.id()));
            } catch (StorageException e) {
                if (e.kind() != StorageException.Kind.BUSY) {
                    log.warn("cannot set the I/O limits of volume {} on this node: {}", bound.id(), e.getMessage());
                }
            }
        }
    }
}
