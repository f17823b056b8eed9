package dev.blockpool.csi;

import csi.v1.Csi.VolumeCapability;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import dev.blockpool.common.FsType;
import dev.blockpool.common.MountOptions;
import dev.blockpool.common.StorageException;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * A volume_capability, parsed once by the same rules for every RPC that carries one: block or a
 * filesystem (ext4 or xfs, with allow-listed mount flags), and an access mode. A malformed one
 * is INVALID_ARGUMENT. Whether the driver serves its access mode is a separate question
 * ({@link #unservedMode}), because the spec answers it differently: the controller refuses the
 * request, the node answers FAILED_PRECONDITION ("exceeds capabilities"). A loop-backed ext4 or
 * XFS filesystem is safe to write from one node only; several nodes may only read it. Raw block
 * follows the same rule: there is no cluster-aware locking to offer a multi-node writer.
 *
 * @param fsType     the filesystem the request names, if any
 * @param mountFlags the request's mount flags, split and allow-listed ("ro" and "rw" included)
 */
public record Capability(boolean block, Optional<FsType> fsType, List<String> mountFlags, Mode mode) {

    private static final Set<Mode> SERVED_MODES = EnumSet.of(
            Mode.SINGLE_NODE_WRITER,
            Mode.SINGLE_NODE_READER_ONLY,
            Mode.SINGLE_NODE_SINGLE_WRITER,
            Mode.SINGLE_NODE_MULTI_WRITER,
            Mode.MULTI_NODE_READER_ONLY);

    public Capability {
        mountFlags = List.copyOf(mountFlags);
    }

    /** The capability of a request that requires one (field {@code volume_capability}). */
    public static Capability required(boolean present, VolumeCapability capability) {
        if (!present) {
            throw CsiException.invalidArgument("volume_capability is required");
        }
        return parse(capability);
    }

    /** INVALID_ARGUMENT, with the reason, for a malformed capability. */
    public static Capability parse(VolumeCapability capability) {
        Optional<String> problem = malformation(capability);
        if (problem.isPresent()) {
            throw CsiException.invalidArgument("%s", problem.get());
        }
        return build(capability);
    }

    /** Parses the capability and requires its access mode to be served (INVALID_ARGUMENT otherwise). */
    public static Capability parseServed(VolumeCapability capability) {
        return parse(capability).served();
    }

    /** This capability, once its access mode is known to be served; INVALID_ARGUMENT otherwise. */
    public Capability served() {
        unservedMode().ifPresent(reason -> {
            throw CsiException.invalidArgument("%s", reason);
        });
        return this;
    }

    /** Why the driver cannot serve {@code capability}, malformed or not served, or empty when it can. */
    public static Optional<String> problem(VolumeCapability capability) {
        return malformation(capability).or(() -> build(capability).unservedMode());
    }

    /** Why the driver does not serve this access mode, or empty when it does. */
    public Optional<String> unservedMode() {
        return SERVED_MODES.contains(mode)
                ? Optional.empty()
                : Optional.of(
                        "access mode " + mode + " is not supported: use a single-node mode or MULTI_NODE_READER_ONLY");
    }

    private static Optional<String> malformation(VolumeCapability capability) {
        if (!capability.hasBlock() && !capability.hasMount()) {
            return Optional.of("volume_capability needs an access type: mount or block");
        }
        Mode mode = capability.getAccessMode().getMode();
        if (!capability.hasAccessMode() || mode == Mode.UNKNOWN) {
            return Optional.of("volume_capability.access_mode is required");
        }
        if (capability.hasMount()) {
            VolumeCapability.MountVolume mount = capability.getMount();
            if (!mount.getVolumeMountGroup().isEmpty()) {
                return Optional.of("volume_mount_group is not supported by this driver");
            }
            try {
                List<String> flags = MountOptions.parse(mount.getMountFlagsList());
                if (!mount.getFsType().isEmpty()) {
                    MountOptions.requireAllowedFor(flags, FsType.parse(mount.getFsType()));
                }
            } catch (StorageException e) {
                return Optional.of(e.getMessage());
            }
        }
        return Optional.empty();
    }

    private static Capability build(VolumeCapability capability) {
        Mode mode = capability.getAccessMode().getMode();
        if (capability.hasBlock()) {
            return new Capability(true, Optional.empty(), List.of(), mode);
        }
        VolumeCapability.MountVolume mount = capability.getMount();
        Optional<FsType> type =
                mount.getFsType().isEmpty() ? Optional.empty() : Optional.of(FsType.parse(mount.getFsType()));
        return new Capability(false, type, MountOptions.parse(mount.getMountFlagsList()), mode);
    }

    /** Whether the capability alone asks for read-only: a reader-only mode or an "ro" flag. */
    public boolean readOnly() {
        return mode == Mode.SINGLE_NODE_READER_ONLY || mode == Mode.MULTI_NODE_READER_ONLY || mountFlags.contains("ro");
    }

    /** Whether only one node may use the volume at a time. */
    public boolean singleNode() {
        return mode != Mode.MULTI_NODE_READER_ONLY;
    }

    /** SINGLE_NODE_SINGLE_WRITER: one publish on the node at a time. */
    public boolean singleWriter() {
        return mode == Mode.SINGLE_NODE_SINGLE_WRITER;
    }

    /** The mount flags without "ro"/"rw": read-only is decided on its own, from every source. */
    public List<String> filesystemFlags() {
        return mountFlags.stream()
                .filter(o -> !o.equals("ro") && !o.equals("rw"))
                .toList();
    }
}
