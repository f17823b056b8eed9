package dev.blockpool.controller;

import static dev.blockpool.csi.StatusAssertions.assertStatusOfThrown;
import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.FsType;
import dev.blockpool.common.IoLimits;
import dev.blockpool.pool.Allocation;
import io.grpc.Status;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class VolumeParametersTest {

    private static void assertInvalid(
            Map<String, String> parameters, Optional<String> capabilityFsType, String messagePart) {
        assertThat(assertStatusOfThrown(
                        () -> VolumeParameters.parse(parameters, capabilityFsType.map(FsType::parse)),
                        Status.Code.INVALID_ARGUMENT))
                .contains(messagePart);
    }

    @Test
    void defaultsAreExt4AndSparse() {
        assertThat(VolumeParameters.parse(Map.of(), Optional.empty()))
                .isEqualTo(new VolumeParameters(FsType.EXT4, Allocation.SPARSE, IoLimits.NONE));
    }

    @Test
    void fsTypeAndAllocationAreRead() {
        assertThat(VolumeParameters.parse(Map.of("fsType", "xfs", "allocation", "preallocated"), Optional.empty()))
                .isEqualTo(new VolumeParameters(FsType.XFS, Allocation.PREALLOCATED, IoLimits.NONE));
        assertThat(VolumeParameters.parse(Map.of("allocation", "Sparse"), Optional.empty())
                        .allocation())
                .isEqualTo(Allocation.SPARSE);
    }

    @Test
    void theCapabilityFsTypeIsUsedWhenTheParametersNameNone() {
        assertThat(VolumeParameters.parse(Map.of(), Optional.of(FsType.XFS)).fsType())
                .isEqualTo(FsType.XFS);
        assertThat(VolumeParameters.parse(Map.of("fsType", "xfs"), Optional.of(FsType.XFS))
                        .fsType())
                .isEqualTo(FsType.XFS);
    }

    @Test
    void fsTypeInParametersAndCapabilityMustAgree() {
        assertInvalid(Map.of("fsType", "ext4"), Optional.of("xfs"), "contradicts");
    }

    @ParameterizedTest
    @ValueSource(strings = {"fstype", "FsType", "size", "replicas", "allocation ", "csi.storage.k8s.io", "", "../x"})
    void unknownKeysAreInvalid(String key) {
        assertInvalid(Map.of(key, "v"), Optional.empty(), "is not supported");
    }

    @Test
    void keysTheProvisionerAddsAreAccepted() {
        Map<String, String> parameters = Map.of(
                "csi.storage.k8s.io/pvc/name", "data",
                "csi.storage.k8s.io/pvc/namespace", "default",
                "csi.storage.k8s.io/pv/name", "pvc-1234",
                "fsType", "xfs");
        assertThat(VolumeParameters.parse(parameters, Optional.empty()))
                .isEqualTo(new VolumeParameters(FsType.XFS, Allocation.SPARSE, IoLimits.NONE));
    }

    @Test
    void theMarkerOfEphemeralInlineVolumesIsRefused() {
        assertInvalid(Map.of("csi.storage.k8s.io/ephemeral", "true"), Optional.empty(), "is not supported");
    }

    @ParameterizedTest
    @ValueSource(strings = {"ext3", "btrfs", "nfs", "", "EXT4"})
    void unsupportedFsTypesAreInvalid(String fsType) {
        assertInvalid(Map.of("fsType", fsType), Optional.empty(), "not supported");
    }

    @ParameterizedTest
    @ValueSource(strings = {"thick", "", "lazy"})
    void unknownAllocationsAreInvalid(String allocation) {
        assertInvalid(Map.of("allocation", allocation), Optional.empty(), "allocation");
    }
}
