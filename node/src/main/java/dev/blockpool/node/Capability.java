package dev.blockpool.node;

import csi.v1.Csi;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import dev.blockpool.common.CsiException;
import dev.blockpool.node.host.FsType;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** A request's volume_capability, validated: block or filesystem, fs type, mount flags, access mode. */
record Capability(boolean block, Optional<FsType> fsType, List<String> options, Mode mode) {

    static Capability of(boolean present, Csi.VolumeCapability capability) {
        if (!present) {
            throw CsiException.invalidArgument("volume_capability is required");
        }
        Mode mode = capability.getAccessMode().getMode();
        if (!capability.hasAccessMode() || mode == Mode.UNKNOWN || mode == Mode.UNRECOGNIZED) {
            throw CsiException.invalidArgument("volume_capability.access_mode is required");
        }
        if (capability.hasBlock()) {
            return new Capability(true, Optional.empty(), List.of(), mode);
        }
        if (!capability.hasMount()) {
            throw CsiException.invalidArgument("volume_capability needs an access type: mount or block");
        }
        Csi.VolumeCapability.MountVolume mount = capability.getMount();
        if (!mount.getVolumeMountGroup().isEmpty()) {
            throw CsiException.invalidArgument("volume_mount_group is not supported by this driver");
        }
        Optional<FsType> type = mount.getFsType().isEmpty() ? Optional.empty() : Optional.of(FsType.parse(mount.getFsType()));
        List<String> options = MountOptions.parse(mount.getMountFlagsList());
        type.ifPresent(t -> MountOptions.requireAllowedFor(options, t));
        return new Capability(false, type, options, mode);
    }

    private static final String READONLY_CONTEXT = "readonly";
    private static final String FS_TYPE_CONTEXT = "fsType";

    /**
     * Whether the volume is to be mounted read-only: asked by the request (publish's readonly),
     * the access mode, an "ro" flag, or the publish_context ControllerPublish returned.
     */
    boolean readOnly(boolean requested, Map<String, String> publishContext) {
        return requested || mode == Mode.SINGLE_NODE_READER_ONLY || mode == Mode.MULTI_NODE_READER_ONLY
                || options.contains("ro") || "true".equals(publishContext.get(READONLY_CONTEXT));
    }

    /** The filesystem when the request names none: the volume context's, else the volume's, else ext4. */
    static FsType fallbackType(Map<String, String> volumeContext, Optional<String> volumeFsType) {
        return Optional.ofNullable(volumeContext.get(FS_TYPE_CONTEXT)).filter(s -> !s.isEmpty()).or(() -> volumeFsType)
                .map(FsType::parse).orElse(FsType.EXT4);
    }

    /** FAILED_PRECONDITION when the volume was not created for this kind of use. */
    void requireServableBy(NodeVolume volume) {
        if (block && !volume.blockable()) {
            throw CsiException.failedPrecondition("volume %s was created as a filesystem volume, not for block access",
                    volume.id());
        }
        if (!block && !volume.mountable()) {
            throw CsiException.failedPrecondition("volume %s was created for block access, not as a filesystem",
                    volume.id());
        }
        if (!block && mode == Mode.MULTI_NODE_MULTI_WRITER) {
            throw CsiException.failedPrecondition(
                    "an ext4 or xfs filesystem cannot be written from several nodes at once (MULTI_NODE_MULTI_WRITER)");
        }
        if (!block && fsType.isPresent() && volume.fsType().isPresent()
                && !volume.fsType().get().equals(fsType.get().fsName())) {
            throw CsiException.failedPrecondition("volume %s was created for %s, not %s", volume.id(),
                    volume.fsType().get(), fsType.get());
        }
    }

    /** The filesystem to mount: the requested type, else the volume context's or the volume's, else ext4. */
    NodeHost.FilesystemRequest filesystem(NodeVolume volume, Map<String, String> volumeContext, boolean readOnly) {
        FsType fallback = fallbackType(volumeContext, volume.fsType());
        List<String> flags = options.stream().filter(o -> !o.equals("ro") && !o.equals("rw")).toList();
        MountOptions.requireAllowedFor(flags, fsType.orElse(fallback)); // again for what is on the disk, at the mount
        return new NodeHost.FilesystemRequest(fsType, fallback, flags, readOnly);
    }
}
