package dev.blockpool.node;

import dev.blockpool.common.HealthProblem;
import dev.blockpool.csi.CsiKeys;
import dev.blockpool.csi.PoolScope;
import dev.blockpool.csi.RequestFields;
import dev.blockpool.node.NodeVolume.Lifetime;
import dev.blockpool.pool.AccessType;
import dev.blockpool.pool.Allocation;
import dev.blockpool.pool.Ids;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.Volume;
import dev.blockpool.pool.VolumeSpec;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The node's view of the pool. An ephemeral inline volume is an ordinary pool volume named
 * after kubelet's handle (with a prefix no CreateVolume name produced by the provisioner has)
 * and marked by a parameter, so it survives a driver restart and NodeUnpublish can find it.
 */
public final class PoolVolumeCatalog implements VolumeCatalog {

    static final String EPHEMERAL_NAME_PREFIX = "ephemeral:";

    private final Pool pool;
    private final PoolScope scope;

    public PoolVolumeCatalog(Pool pool) {
        this(pool, PoolScope.shared());
    }

    public PoolVolumeCatalog(Pool pool, PoolScope scope) {
        this.pool = pool;
        this.scope = scope;
    }

    /**
     * A volume ID names a volume, never an ephemeral one: whatever its parameters say, NodeUnpublish
     * must not delete it. Only kubelet's handle of an inline volume (never a volume ID) finds
     * an ephemeral volume, and only one whose name carries the prefix and the handle.
     */
    @Override
    public Optional<NodeVolume> find(String volumeId) {
        if (Ids.isVolumeId(volumeId)) {
            return pool.volumes().find(volumeId).map(v -> toNodeVolume(v, Lifetime.PERSISTENT));
        }
        String name = EPHEMERAL_NAME_PREFIX + volumeId;
        return pool.volumes()
                .find(poolIdOf(volumeId))
                .filter(v ->
                        name.equals(v.name()) && "true".equals(v.parameters().get(CsiKeys.EPHEMERAL)))
                .map(v -> toNodeVolume(v, Lifetime.EPHEMERAL));
    }

    @Override
    public Optional<Path> imageOf(String volumeId) {
        return Ids.isVolumeId(volumeId) ? Optional.of(pool.volumes().imagePath(volumeId)) : Optional.empty();
    }

    @Override
    public Path imageFor(String volumeId) {
        return pool.volumes().imagePath(poolIdOf(volumeId));
    }

    @Override
    public List<HealthProblem> health(String volumeId) {
        return pool.health().volume(poolIdOf(volumeId)).problems();
    }

    /** The pool's ID of the volume: the ID itself, or that of the inline volume made for kubelet's handle. */
    @Override
    public String lockKey(String volumeId) {
        return poolIdOf(volumeId);
    }

    private static String poolIdOf(String volumeId) {
        return Ids.isVolumeId(volumeId) ? volumeId : Ids.volumeIdFor(EPHEMERAL_NAME_PREFIX + volumeId);
    }

    @Override
    public List<HealthProblem> storageHealth() {
        return pool.health().pool();
    }

    @Override
    public NodeVolume createEphemeral(String handle, long capacityBytes, String fsType) {
        RequestFields.id("volume_id", handle);
        Volume volume = pool.volumes()
                .create(new VolumeSpec(
                        EPHEMERAL_NAME_PREFIX + handle,
                        capacityBytes,
                        fsType,
                        Allocation.SPARSE,
                        Set.of(AccessType.MOUNT),
                        Map.of(CsiKeys.EPHEMERAL, "true"),
                        Optional.empty()));
        return toNodeVolume(volume, Lifetime.EPHEMERAL);
    }

    @Override
    public void growImage(NodeVolume volume, long bytes) {
        if (scope instanceof PoolScope.NodeLocal) {
            pool.volumes().expand(volume.id(), bytes); // a size it has already leaves it as it is
        }
    }

    @Override
    public void delete(NodeVolume volume) {
        pool.volumes().delete(volume.id());
    }

    private NodeVolume toNodeVolume(Volume volume, Lifetime lifetime) {
        // A record that names no access type allows either.
        Set<AccessType> accessTypes =
                volume.accessTypes().isEmpty() ? EnumSet.allOf(AccessType.class) : volume.accessTypes();
        return new NodeVolume(
                volume.id(),
                pool.volumes().imagePath(volume.id()),
                Optional.ofNullable(volume.fsType()).filter(s -> !s.isEmpty()),
                accessTypes,
                lifetime,
                volume.ioLimits());
    }
}
