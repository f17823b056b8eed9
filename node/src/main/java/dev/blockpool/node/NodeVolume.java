package dev.blockpool.node;

import dev.blockpool.common.IoLimits;
import dev.blockpool.pool.AccessType;
import java.nio.file.Path;
import java.util.Optional;
import java.util.Set;

/**
 * What the node needs to know about a volume in the pool.
 *
 * @param fsType      the filesystem the volume was created for, if any ("ext4" or "xfs")
 * @param accessTypes how the volume may be consumed: as a filesystem, as a raw block device, or both
 * @param lifetime    whether the volume outlives its pod, or is the pod's inline volume
 * @param ioLimits    what the I/O of the pods it is published to is limited to
 */
public record NodeVolume(
        String id,
        Path image,
        Optional<String> fsType,
        Set<AccessType> accessTypes,
        Lifetime lifetime,
        IoLimits ioLimits) {

    /** A volume whose I/O is not limited. */
    public NodeVolume(String id, Path image, Optional<String> fsType, Set<AccessType> accessTypes, Lifetime lifetime) {
        this(id, image, fsType, accessTypes, lifetime, IoLimits.NONE);
    }

    /** Who ends a volume. */
    public enum Lifetime {
        /** Made and deleted by the controller (CreateVolume, DeleteVolume). */
        PERSISTENT,
        /** Made by NodePublish for a CSI inline volume, deleted by NodeUnpublish. */
        EPHEMERAL
    }

    public NodeVolume {
        accessTypes = Set.copyOf(accessTypes);
    }

    /** Whether the volume may be consumed as {@code type}. */
    public boolean allows(AccessType type) {
        return accessTypes.contains(type);
    }

    public boolean ephemeral() {
        return lifetime == Lifetime.EPHEMERAL;
    }
}
