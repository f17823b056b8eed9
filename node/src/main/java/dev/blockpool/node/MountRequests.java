package dev.blockpool.node;

import dev.blockpool.common.FsType;
import dev.blockpool.common.MountOptions;
import dev.blockpool.csi.Capability;
import dev.blockpool.csi.CsiException;
import dev.blockpool.csi.CsiKeys;
import dev.blockpool.host.filesystems.FilesystemRequest;
import dev.blockpool.pool.AccessType;
import java.util.Map;
import java.util.Optional;

/** What a node request's capability asks of a volume: read-only or not, and which filesystem. */
final class MountRequests {

    private MountRequests() {}

    /**
     * Whether the volume is to be mounted read-only: asked by the request (publish's readonly),
     * the capability (mode or "ro" flag), or the publish_context ControllerPublish returned.
     */
    static boolean readOnly(Capability capability, boolean requested, Map<String, String> publishContext) {
        return requested || capability.readOnly() || "true".equals(publishContext.get(CsiKeys.READONLY));
    }

    /** The filesystem when the request names none: the volume context's, else the volume's, else ext4. */
    static FsType fallbackType(Map<String, String> volumeContext, Optional<String> volumeFsType) {
        return Optional.ofNullable(volumeContext.get(CsiKeys.FS_TYPE))
                .filter(s -> !s.isEmpty())
                .or(() -> volumeFsType)
                .map(FsType::parse)
                .orElse(FsType.EXT4);
    }

    /**
     * FAILED_PRECONDITION, the spec's "exceeds capabilities", for an access mode the driver does
     * not serve or a volume not created for this kind of use.
     */
    static void requireServable(Capability capability, NodeVolume volume) {
        capability.unservedMode().ifPresent(reason -> {
            throw CsiException.failedPrecondition("%s", reason);
        });
        if (capability.block() && !volume.allows(AccessType.BLOCK)) {
            throw CsiException.failedPrecondition(
                    "volume %s was created as a filesystem volume, not for block access", volume.id());
        }
        if (!capability.block() && !volume.allows(AccessType.MOUNT)) {
            throw CsiException.failedPrecondition(
                    "volume %s was created for block access, not as a filesystem", volume.id());
        }
        Optional<FsType> requested = capability.fsType();
        if (!capability.block()
                && requested.isPresent()
                && volume.fsType().isPresent()
                && !volume.fsType().get().equals(requested.get().fsName())) {
            throw CsiException.failedPrecondition(
                    "volume %s was created for %s, not %s",
                    volume.id(), volume.fsType().get(), requested.get());
        }
    }

    /** The filesystem to mount: the requested type, else the volume context's or the volume's, else ext4. */
    static FilesystemRequest filesystem(
            Capability capability, NodeVolume volume, Map<String, String> volumeContext, boolean readOnly) {
        FsType fallback = fallbackType(volumeContext, volume.fsType());
        // Checked again at the mount against what is on the disk.
        MountOptions.requireAllowedFor(
                capability.filesystemFlags(), capability.fsType().orElse(fallback));
        return new FilesystemRequest(capability.fsType(), fallback, capability.filesystemFlags(), readOnly);
    }
}
