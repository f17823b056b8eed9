package dev.blockpool.controller;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import csi.v1.Csi.VolumeCapability;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import dev.blockpool.common.CsiException;
import dev.blockpool.pool.AccessType;
import io.grpc.Status;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class CapabilitiesTest {

    static VolumeCapability mount(String fsType, Mode mode) {
        return VolumeCapability.newBuilder()
                .setMount(VolumeCapability.MountVolume.newBuilder().setFsType(fsType))
                .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(mode)).build();
    }

    static VolumeCapability block(Mode mode) {
        return VolumeCapability.newBuilder()
                .setBlock(VolumeCapability.BlockVolume.getDefaultInstance())
                .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(mode)).build();
    }

    private static void assertInvalid(List<VolumeCapability> capabilities) {
        assertThatThrownBy(() -> Capabilities.require(capabilities)).isInstanceOfSatisfying(CsiException.class,
                e -> assertThat(e.code()).isEqualTo(Status.Code.INVALID_ARGUMENT));
    }

    @ParameterizedTest
    @EnumSource(value = Mode.class, names = {"SINGLE_NODE_WRITER", "SINGLE_NODE_READER_ONLY",
            "SINGLE_NODE_SINGLE_WRITER", "SINGLE_NODE_MULTI_WRITER", "MULTI_NODE_READER_ONLY"})
    void modesTheDriverCanHonourAreAccepted(Mode mode) {
        assertThat(Capabilities.unsupported(mount("", mode))).isEmpty();
        assertThat(Capabilities.unsupported(block(mode))).isEmpty();
        assertThat(Capabilities.singleNode(mount("", mode))).isEqualTo(mode != Mode.MULTI_NODE_READER_ONLY);
    }

    @ParameterizedTest
    @EnumSource(value = Mode.class, names = {"UNKNOWN", "MULTI_NODE_SINGLE_WRITER", "MULTI_NODE_MULTI_WRITER"})
    void multiNodeWritersAndUnknownModesAreRefused(Mode mode) {
        assertThat(Capabilities.unsupported(mount("ext4", mode))).hasValueSatisfying(
                reason -> assertThat(reason).contains("access mode"));
        assertInvalid(List.of(block(mode)));
    }

    @Test
    void anAccessTypeIsRequired() {
        VolumeCapability noType = VolumeCapability.newBuilder()
                .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(Mode.SINGLE_NODE_WRITER)).build();
        assertThat(Capabilities.unsupported(noType)).isPresent();
        assertInvalid(List.of(noType));
    }

    @Test
    void anAccessModeIsRequired() {
        VolumeCapability noMode = VolumeCapability.newBuilder()
                .setMount(VolumeCapability.MountVolume.getDefaultInstance()).build();
        assertThat(Capabilities.unsupported(noMode)).isPresent();
    }

    @Test
    void onlyExt4AndXfsAreSupported() {
        assertThat(Capabilities.unsupported(mount("ext4", Mode.SINGLE_NODE_WRITER))).isEmpty();
        assertThat(Capabilities.unsupported(mount("xfs", Mode.SINGLE_NODE_WRITER))).isEmpty();
        assertThat(Capabilities.unsupported(mount("zfs", Mode.SINGLE_NODE_WRITER))).hasValueSatisfying(
                reason -> assertThat(reason).contains("zfs"));
    }

    @Test
    void requireCollectsTheAccessTypes() {
        assertThat(Capabilities.require(List.of(mount("", Mode.SINGLE_NODE_WRITER))))
                .containsExactly(AccessType.MOUNT);
        assertThat(Capabilities.require(List.of(block(Mode.SINGLE_NODE_WRITER))))
                .containsExactly(AccessType.BLOCK);
        assertThat(Capabilities.require(List.of(block(Mode.SINGLE_NODE_WRITER), mount("", Mode.SINGLE_NODE_WRITER))))
                .containsExactlyInAnyOrder(AccessType.BLOCK, AccessType.MOUNT);
    }

    @Test
    void anEmptyListIsInvalidAndOneBadCapabilitySpoilsTheRequest() {
        assertInvalid(List.of());
        assertInvalid(List.of(mount("", Mode.SINGLE_NODE_WRITER), mount("", Mode.MULTI_NODE_MULTI_WRITER)));
    }

    @Test
    void fsTypesMustAgreeAcrossCapabilities() {
        assertThat(Capabilities.fsType(List.of(block(Mode.SINGLE_NODE_WRITER), mount("", Mode.SINGLE_NODE_WRITER))))
                .isEmpty();
        assertThat(Capabilities.fsType(List.of(mount("xfs", Mode.SINGLE_NODE_WRITER),
                mount("xfs", Mode.SINGLE_NODE_READER_ONLY)))).isEqualTo(Optional.of("xfs"));
        assertThatThrownBy(() -> Capabilities.fsType(List.of(mount("xfs", Mode.SINGLE_NODE_WRITER),
                mount("ext4", Mode.SINGLE_NODE_WRITER)))).isInstanceOfSatisfying(CsiException.class,
                e -> assertThat(e.code()).isEqualTo(Status.Code.INVALID_ARGUMENT));
    }
}
