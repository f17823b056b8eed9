package dev.blockpool.controller;

import static dev.blockpool.controller.ControllerHarness.MIB;
import static dev.blockpool.controller.ControllerHarness.createRequest;
import static dev.blockpool.csi.StatusAssertions.failure;
import static org.assertj.core.api.Assertions.assertThat;

import csi.v1.Csi.ControllerModifyVolumeRequest;
import dev.blockpool.common.IoLimits;
import dev.blockpool.csi.PoolScope;
import dev.blockpool.pool.NodeIoLimits;
import dev.blockpool.pool.Volume;
import io.grpc.Status;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The I/O limits of a StorageClass and a VolumeAttributesClass: kept in the volume's record,
 * changed by ControllerModifyVolume, and handed at once to the node served beside the controller.
 */
class ModifyIoLimitsTest {

    @TempDir
    Path poolDir;

    /** The volumes the node beside was told to apply, with their limits then. */
    private final List<Volume> applied = new CopyOnWriteArrayList<>();

    private ControllerHarness controller;

    @BeforeEach
    void start() {
        controller = new ControllerHarness(poolDir, PoolScope.shared(), (NodeIoLimits) applied::add);
    }

    @AfterEach
    void stop() {
        controller.close();
    }

    private String create(String name, Map<String, String> storageClass, Map<String, String> attributesClass) {
        return controller
                .stub()
                .createVolume(createRequest(name, 4 * MIB)
                        .putAllParameters(storageClass)
                        .putAllMutableParams(attributesClass)
                        .build())
                .getVolume()
                .getVolumeId();
    }

    private void modify(String volumeId, Map<String, String> attributesClass) {
        controller
                .stub()
                .controllerModifyVolume(ControllerModifyVolumeRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .putAllMutableParams(attributesClass)
                        .build());
    }

    private IoLimits recorded(String volumeId) {
        return controller.pool().volumes().get(volumeId).ioLimits();
    }

    @Test
    void createVolumeRecordsTheLimitsOfBothClasses() {
        String id = create(
                "pvc-limited",
                Map.of("readIOPS", "100", "writeBytesPerSecond", "20Mi"),
                Map.of("readIOPS", "300", "writeIOPS", "200"));

        assertThat(recorded(id)).isEqualTo(new IoLimits(300, 200, 0, 20L << 20));
        assertThat(recorded(create("pvc-free", Map.of(), Map.of()))).isEqualTo(IoLimits.NONE);
    }

    @Test
    void modifyVolumeReplacesTheLimitsDurablyAndAppliesThemOnTheNodeAtOnce() {
        String id = create("pvc-vac", Map.of("writeBytesPerSecond", "20Mi"), Map.of());

        modify(id, Map.of("readIOPS", "200", "readBytesPerSecond", "10Mi"));
        IoLimits limited = new IoLimits(200, 0, 10L << 20, 20L << 20);
        assertThat(recorded(id)).isEqualTo(limited);
        assertThat(applied).extracting(Volume::ioLimits).containsExactly(limited);
        controller.restart();
        assertThat(recorded(id)).as("after a restart").isEqualTo(limited);

        // a class that leaves a key out has the StorageClass's; "unlimited" lifts even that
        modify(id, Map.of("allocation", "preallocated"));
        assertThat(recorded(id)).isEqualTo(new IoLimits(0, 0, 0, 20L << 20));
        modify(id, Map.of("writeBytesPerSecond", "unlimited"));
        assertThat(recorded(id)).isEqualTo(IoLimits.NONE);
    }

    /** What another node's controller hands over the peer channel is applied on the volume's node at once too. */
    @Test
    void aChangeHandedToTheVolumesNodeIsAppliedThereAtOnce(@TempDir Path nodeBPool) {
        try (ControllerHarness nodeB =
                new ControllerHarness(nodeBPool, PoolScope.nodeLocal("node-b"), (NodeIoLimits) applied::add)) {
            String id = nodeB.stub()
                    .createVolume(createRequest("pvc-on-b", 4 * MIB).build())
                    .getVolume()
                    .getVolumeId();

            nodeB.service()
                    .modifyHere(ControllerModifyVolumeRequest.newBuilder()
                            .setVolumeId(id)
                            .putMutableParams("writeIOPS", "300")
                            .build());

            IoLimits limited = new IoLimits(0, 300, 0, 0);
            assertThat(nodeB.pool().volumes().get(id).ioLimits()).isEqualTo(limited);
            assertThat(applied).extracting(Volume::ioLimits).containsExactly(limited);
        }
    }

    @Test
    void anInfeasibleLimitIsRefusedAndChangesNothing() {
        String id = create("pvc-vac-bad", Map.of(), Map.of("writeIOPS", "100"));

        assertThat(failure(() -> modify(id, Map.of("writeIOPS", "100.5")), Status.Code.INVALID_ARGUMENT))
                .hasMessageContaining("writeIOPS \"100.5\" is not a whole number");
        assertThat(failure(() -> modify(id, Map.of("readBytesPerSecond", "10Ki")), Status.Code.INVALID_ARGUMENT))
                .hasMessageContaining("below 1Mi");
        assertThat(failure(() -> create("pvc-bad", Map.of("readIOPS", "-1"), Map.of()), Status.Code.INVALID_ARGUMENT))
                .hasMessageContaining("readIOPS \"-1\" is negative");
        assertThat(recorded(id)).isEqualTo(new IoLimits(0, 100, 0, 0));
        assertThat(applied).isEmpty();
    }
}
