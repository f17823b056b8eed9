package dev.blockpool.controller;

import static dev.blockpool.csi.CsiRequests.block;
import static dev.blockpool.csi.CsiRequests.mount;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import dev.blockpool.common.FsType;
import dev.blockpool.csi.CsiException;
import dev.blockpool.pool.AccessType;
import io.grpc.Status;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What CreateVolume makes of a request's list of capabilities. */
class CapabilitiesTest {

    private static void assertInvalid(Runnable call) {
        assertThatThrownBy(call::run)
                .isInstanceOfSatisfying(
                        CsiException.class, e -> assertThat(e.code()).isEqualTo(Status.Code.INVALID_ARGUMENT));
    }

    @Test
    void theAccessTypesAreCollected() {
        assertThat(Capabilities.accessTypes(Capabilities.require(List.of(mount(Mode.SINGLE_NODE_WRITER)))))
                .containsExactly(AccessType.MOUNT);
        assertThat(Capabilities.accessTypes(
                        Capabilities.require(List.of(block(Mode.SINGLE_NODE_WRITER), mount(Mode.SINGLE_NODE_WRITER)))))
                .containsExactlyInAnyOrder(AccessType.BLOCK, AccessType.MOUNT);
    }

    @Test
    void anEmptyListIsInvalidAndOneBadCapabilitySpoilsTheRequest() {
        assertInvalid(() -> Capabilities.require(List.of()));
        assertInvalid(() ->
                Capabilities.require(List.of(mount(Mode.SINGLE_NODE_WRITER), mount(Mode.MULTI_NODE_MULTI_WRITER))));
    }

    @Test
    void fsTypesMustAgreeAcrossCapabilities() {
        assertThat(Capabilities.fsType(
                        Capabilities.require(List.of(block(Mode.SINGLE_NODE_WRITER), mount(Mode.SINGLE_NODE_WRITER)))))
                .isEmpty();
        assertThat(Capabilities.fsType(Capabilities.require(
                        List.of(mount("xfs", Mode.SINGLE_NODE_WRITER), mount("xfs", Mode.SINGLE_NODE_READER_ONLY)))))
                .contains(FsType.XFS);
        assertInvalid(() -> Capabilities.fsType(Capabilities.require(
                List.of(mount("xfs", Mode.SINGLE_NODE_WRITER), mount("ext4", Mode.SINGLE_NODE_WRITER)))));
    }
}
