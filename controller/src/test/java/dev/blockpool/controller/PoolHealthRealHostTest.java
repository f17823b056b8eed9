package dev.blockpool.controller;

import static dev.blockpool.csi.StatusAssertions.assertCode;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import csi.v1.Csi.ControllerGetVolumeHealthRequest;
import csi.v1.Csi.ControllerListVolumeHealthRequest;
import csi.v1.Csi.VolumeHealthErrorType;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.common.SilentFuseMount;
import io.grpc.Status;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The controller's health calls on a pool whose server died: answered at their deadline, never hung. */
@NeedsRoot
class PoolHealthRealHostTest {

    @TempDir
    Path dir;

    @Test
    void aPoolThatDoesNotAnswerMakesEveryVolumeInaccessible() throws Exception {
        assumeTrue(SilentFuseMount.available(), "needs root and /dev/fuse");
        try (ControllerHarness controller = new ControllerHarness(dir.resolve("pool"))) {
            String id = controller
                    .stub()
                    .createVolume(ControllerHarness.createRequest("pvc", 16 * ControllerHarness.MIB)
                            .build())
                    .getVolume()
                    .getVolumeId();
            // closed before the harness, whose release touches the pool
            try (SilentFuseMount _ = SilentFuseMount.on(dir.resolve("pool"))) {
                var health = controller
                        .stub()
                        .controllerGetVolumeHealth(ControllerGetVolumeHealthRequest.newBuilder()
                                .setVolumeId(id)
                                .build())
                        .getVolumeHealth();
                assertThat(health.getHealthStatusesList()).singleElement().satisfies(entry -> {
                    assertThat(entry.getStatus()).isEqualTo(VolumeHealthErrorType.INACCESSIBLE);
                    assertThat(entry.getReason()).isEqualTo("PoolUnavailable");
                    assertThat(entry.getMessage()).contains("does not answer within 5 s");
                });
                assertCode(
                        () -> controller
                                .stub()
                                .controllerListVolumeHealth(ControllerListVolumeHealthRequest.getDefaultInstance()),
                        Status.Code.FAILED_PRECONDITION);
            }
        }
    }
}
