package dev.blockpool.driver;

import static dev.blockpool.driver.DriversOnOnePool.ready;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import csi.v1.ControllerGrpc;
import csi.v1.Csi.CreateVolumeRequest;
import csi.v1.Csi.VolumeCapability;
import dev.blockpool.csi.CsiRequests;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A second controller on a pool another one acts on stands by: alive and ready for its
 * livenessprobe (which calls Probe, and would otherwise restart it over and over), refusing
 * changes with the acting controller's name, and taking over once that one has stopped.
 */
class StandbyControllerTest {

    @TempDir
    Path dir;

    @Test
    void aStandbyControllerIsReadyRefusesChangesAndTakesOverWhenThePoolIsFree() throws Exception {
        try (DriversOnOnePool drivers = new DriversOnOnePool(dir)) {
            Driver.Running acting = drivers.start("acting", "node-1", Mode.CONTROLLER);
            Driver.Running standby = drivers.start("standby", "node-1", Mode.CONTROLLER);
            ManagedChannel actingChannel = drivers.channel("acting");
            ManagedChannel standbyChannel = drivers.channel("standby");
            createVolume(actingChannel, "first"); // the first controller takes the pool

            assertThat(ready(standbyChannel))
                    .as("the standby's Probe, which its livenessprobe calls")
                    .isTrue();
            assertThatThrownBy(() -> createVolume(standbyChannel, "second"))
                    .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
                        assertThat(e.getStatus().getDescription())
                                .contains("another controller acts on the pool (pid "
                                        + ProcessHandle.current().pid());
                    });

            acting.stop(Duration.ofSeconds(10));

            assertThat(ready(standbyChannel)).isTrue();
            assertThat(standby.pool().controllerClaim().problem())
                    .as("the standby took over")
                    .isEmpty();
            createVolume(standbyChannel, "second");
        }
    }

    private static void createVolume(ManagedChannel channel, String name) {
        ControllerGrpc.newBlockingStub(channel)
                .createVolume(CreateVolumeRequest.newBuilder()
                        .setName(name)
                        .addVolumeCapabilities(CsiRequests.block(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
                        .build());
    }
}
