package dev.blockpool.controller;

import csi.v1.Csi.VolumeCapability;
import csi.v1.Csi.VolumeCapability.AccessMode;
import dev.blockpool.common.CsiException;
import dev.blockpool.pool.AccessType;
import dev.blockpool.pool.Volume;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Which volume capabilities the driver can honour. A loop-backed ext4 or XFS filesystem is safe
 * to write from one node only; several nodes may only read it. Raw block follows the same rule:
 * the driver has no cluster-aware locking to offer a multi-node writer.
 */
final class Capabilities {

    static final Set<String> FS_TYPES = Set.of("ext4", "xfs");
    private static final Set<AccessMode.Mode> SUPPORTED_MODES = EnumSet.of(
            AccessMode.Mode.SINGLE_NODE_WRITER, AccessMode.Mode.SINGLE_NODE_READER_ONLY,
            AccessMode.Mode.SINGLE_NODE_SINGLE_WRITER, AccessMode.Mode.SINGLE_NODE_MULTI_WRITER,
            AccessMode.Mode.MULTI_NODE_READER_ONLY);

    private Capabilities() {
    }

    /** Why the driver cannot serve {@code capability}, or empty when it can. */
    static Optional<String> unsupported(VolumeCapability capability) {
        if (!capability.hasBlock() && !capability.hasMount()) {
            return Optional.of("a volume capability must set access_type to block or mount");
        }
        if (capability.hasMount() && !capability.getMount().getFsType().isEmpty()
                && !FS_TYPES.contains(capability.getMount().getFsType())) {
            return Optional.of("fs_type " + capability.getMount().getFsType() + " is not supported: use ext4 or xfs");
        }
        if (!capability.hasAccessMode() || !SUPPORTED_MODES.contains(capability.getAccessMode().getMode())) {
            return Optional.of("access mode " + capability.getAccessMode().getMode()
                    + " is not supported: use a single-node mode or MULTI_NODE_READER_ONLY");
        }
        return Optional.empty();
    }

    /** Why {@code capability} does not fit this existing volume, or empty when it does. */
    static Optional<String> unsupported(VolumeCapability capability, Volume volume) {
        return unsupported(capability).or(() -> {
            String fsType = capability.hasMount() ? capability.getMount().getFsType() : "";
            return fsType.isEmpty() || fsType.equals(volume.fsType()) ? Optional.empty()
                    : Optional.of("volume " + volume.id() + " has fs type " + volume.fsType() + ", not " + fsType);
        });
    }

    /** Checks every capability of a request; returns the access types they ask for. */
    static Set<AccessType> require(List<VolumeCapability> capabilities) {
        if (capabilities.isEmpty()) {
            throw CsiException.invalidArgument("volume_capabilities are required");
        }
        Set<AccessType> types = EnumSet.noneOf(AccessType.class);
        for (VolumeCapability capability : capabilities) {
            require(capability);
            types.add(capability.hasBlock() ? AccessType.BLOCK : AccessType.MOUNT);
        }
        return types;
    }

    static void require(VolumeCapability capability) {
        unsupported(capability).ifPresent(reason -> {
            throw CsiException.invalidArgument("%s", reason);
        });
    }

    static boolean singleNode(VolumeCapability capability) {
        return capability.getAccessMode().getMode() != AccessMode.Mode.MULTI_NODE_READER_ONLY;
    }

    /** The fs type the capabilities name, if any (they must agree). */
    static Optional<String> fsType(List<VolumeCapability> capabilities) {
        Set<String> named = new java.util.TreeSet<>();
        for (VolumeCapability capability : capabilities) {
            if (capability.hasMount() && !capability.getMount().getFsType().isEmpty()) {
                named.add(capability.getMount().getFsType());
            }
        }
        if (named.size() > 1) {
            throw CsiException.invalidArgument("volume_capabilities name different fs types %s", named);
        }
        return named.stream().findFirst();
    }
}
