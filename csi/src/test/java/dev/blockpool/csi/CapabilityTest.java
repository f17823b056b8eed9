package dev.blockpool.csi;

import static dev.blockpool.csi.CsiRequests.block;
import static dev.blockpool.csi.CsiRequests.mount;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import csi.v1.Csi.VolumeCapability;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import dev.blockpool.common.FsType;
import io.grpc.Status;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** One parse of volume_capability for every RPC: what the driver serves and what it refuses. */
class CapabilityTest {

    private static void assertInvalid(VolumeCapability capability, String reason) {
        assertThat(Capability.problem(capability))
                .hasValueSatisfying(r -> assertThat(r).contains(reason));
        assertThatThrownBy(() -> Capability.parse(capability))
                .isInstanceOfSatisfying(
                        CsiException.class, e -> assertThat(e.code()).isEqualTo(Status.Code.INVALID_ARGUMENT));
    }

    @ParameterizedTest
    @EnumSource(
            value = Mode.class,
            names = {
                "SINGLE_NODE_WRITER",
                "SINGLE_NODE_READER_ONLY",
                "SINGLE_NODE_SINGLE_WRITER",
                "SINGLE_NODE_MULTI_WRITER",
                "MULTI_NODE_READER_ONLY"
            })
    void modesTheDriverCanHonourAreAccepted(Mode mode) {
        assertThat(Capability.problem(mount(mode))).isEmpty();
        assertThat(Capability.problem(block(mode))).isEmpty();
        assertThat(Capability.parse(mount(mode)).singleNode()).isEqualTo(mode != Mode.MULTI_NODE_READER_ONLY);
        assertThat(Capability.parse(block(mode)).singleWriter()).isEqualTo(mode == Mode.SINGLE_NODE_SINGLE_WRITER);
    }

    @Test
    void anUnknownModeIsMalformed() {
        assertInvalid(mount("ext4", Mode.UNKNOWN), "access_mode is required");
        assertInvalid(block(Mode.UNKNOWN), "access_mode is required");
    }

    @ParameterizedTest
    @EnumSource(
            value = Mode.class,
            names = {"MULTI_NODE_SINGLE_WRITER", "MULTI_NODE_MULTI_WRITER"})
    void multiNodeWritersAreWellFormedButNotServed(Mode mode) {
        for (VolumeCapability capability : List.of(mount("ext4", mode), block(mode))) {
            assertThat(Capability.parse(capability).unservedMode())
                    .hasValueSatisfying(
                            reason -> assertThat(reason).contains("access mode " + mode + " is not supported"));
            assertThat(Capability.problem(capability)).isPresent();
            assertThatThrownBy(() -> Capability.parseServed(capability))
                    .isInstanceOfSatisfying(
                            CsiException.class, e -> assertThat(e.code()).isEqualTo(Status.Code.INVALID_ARGUMENT));
        }
    }

    @Test
    void anAccessTypeAndAnAccessModeAreRequired() {
        assertInvalid(
                VolumeCapability.newBuilder()
                        .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(Mode.SINGLE_NODE_WRITER))
                        .build(),
                "access type");
        assertInvalid(
                VolumeCapability.newBuilder()
                        .setMount(VolumeCapability.MountVolume.getDefaultInstance())
                        .build(),
                "access_mode is required");
        assertThatThrownBy(() -> Capability.required(false, VolumeCapability.getDefaultInstance()))
                .hasMessage("volume_capability is required");
    }

    @Test
    void onlyExt4AndXfsAreServed() {
        assertThat(Capability.parse(mount("ext4", Mode.SINGLE_NODE_WRITER)).fsType())
                .contains(FsType.EXT4);
        assertThat(Capability.parse(mount("xfs", Mode.SINGLE_NODE_WRITER)).fsType())
                .contains(FsType.XFS);
        assertThat(Capability.parse(mount(Mode.SINGLE_NODE_WRITER)).fsType()).isEmpty();
        assertInvalid(mount("zfs", Mode.SINGLE_NODE_WRITER), "\"zfs\" is not supported: use ext4 or xfs");
    }

    @Test
    void mountFlagsAreAllowListedAndMustSuitTheNamedFilesystem() {
        Capability parsed = Capability.parse(mount("ext4", Mode.SINGLE_NODE_WRITER, "noatime,ro", "data=ordered"));
        assertThat(parsed.mountFlags()).containsExactly("noatime", "ro", "data=ordered");
        assertThat(parsed.filesystemFlags()).containsExactly("noatime", "data=ordered");
        assertThat(parsed.readOnly()).isTrue();
        assertInvalid(mount("", Mode.SINGLE_NODE_WRITER, "bind"), "\"bind\" is not allowed");
        assertInvalid(mount("xfs", Mode.SINGLE_NODE_WRITER, "data=ordered"), "not allowed for xfs");
        assertInvalid(mount("", Mode.SINGLE_NODE_WRITER, "ro", "rw"), "both ro and rw");
    }

    @Test
    void aVolumeMountGroupIsNotOffered() {
        assertInvalid(
                VolumeCapability.newBuilder()
                        .setMount(VolumeCapability.MountVolume.newBuilder().setVolumeMountGroup("1000"))
                        .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(Mode.SINGLE_NODE_WRITER))
                        .build(),
                "volume_mount_group");
    }

    @Test
    void readerOnlyModesAreReadOnly() {
        assertThat(Capability.parse(block(Mode.MULTI_NODE_READER_ONLY)).readOnly())
                .isTrue();
        assertThat(Capability.parse(block(Mode.SINGLE_NODE_READER_ONLY)).readOnly())
                .isTrue();
        assertThat(Capability.parse(block(Mode.SINGLE_NODE_WRITER)).readOnly()).isFalse();
        assertThat(Capability.parse(block(Mode.SINGLE_NODE_WRITER)).mountFlags())
                .isEqualTo(List.of());
        assertThat(Capability.parse(mount(Mode.SINGLE_NODE_WRITER)).fsType()).isEqualTo(Optional.empty());
    }
}
