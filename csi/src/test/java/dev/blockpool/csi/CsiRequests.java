package dev.blockpool.csi;

import csi.v1.Csi.CapacityRange;
import csi.v1.Csi.CreateVolumeRequest;
import csi.v1.Csi.VolumeCapability;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import java.util.List;

/** Builders of the request parts every service's tests need. */
public final class CsiRequests {

    private CsiRequests() {}

    /** A filesystem capability with no fs type and no flags. */
    public static VolumeCapability mount(Mode mode) {
        return mount("", mode);
    }

    public static VolumeCapability mount(String fsType, Mode mode, String... flags) {
        return VolumeCapability.newBuilder()
                .setMount(VolumeCapability.MountVolume.newBuilder()
                        .setFsType(fsType)
                        .addAllMountFlags(List.of(flags)))
                .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(mode))
                .build();
    }

    public static VolumeCapability block(Mode mode) {
        return VolumeCapability.newBuilder()
                .setBlock(VolumeCapability.BlockVolume.getDefaultInstance())
                .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(mode))
                .build();
    }

    /** A CreateVolume request as external-provisioner sends it for a claim: a name, a size, one capability. */
    public static CreateVolumeRequest.Builder createVolume(String name, long bytes, VolumeCapability capability) {
        return CreateVolumeRequest.newBuilder()
                .setName(name)
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(bytes))
                .addVolumeCapabilities(capability);
    }
}
