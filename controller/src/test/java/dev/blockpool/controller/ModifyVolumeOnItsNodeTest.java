package dev.blockpool.controller;

import static dev.blockpool.controller.ControllerHarness.MIB;
import static dev.blockpool.controller.ControllerHarness.createRequest;
import static dev.blockpool.csi.StatusAssertions.failure;
import static org.assertj.core.api.Assertions.assertThat;

import csi.v1.Csi.ControllerGetCapabilitiesRequest;
import csi.v1.Csi.ControllerModifyVolumeRequest;
import csi.v1.Csi.ControllerServiceCapability.RPC.Type;
import dev.blockpool.csi.PoolScope;
import dev.blockpool.pool.Allocation;
import dev.blockpool.pool.ContentSource;
import dev.blockpool.pool.Ids;
import dev.blockpool.pool.transfer.RemoteImage;
import io.grpc.Status;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * ControllerModifyVolume on a node-local pool whose driver reaches the other nodes: the one
 * csi-resizer of the cluster calls the driver it runs beside, which applies a volume of its own
 * pool and hands any other to the node whose pool holds it.
 */
class ModifyVolumeOnItsNodeTest {

    @TempDir
    Path poolDir;

    private ControllerHarness controller;
    /** The volumes the other nodes' pools hold, and the requests handed to them. */
    private final Set<String> elsewhere = Set.of(Ids.volumeIdFor("pvc-on-node-b"));

    private final List<ControllerModifyVolumeRequest> handedOn = new CopyOnWriteArrayList<>();

    private final OtherNodes otherNodes = new OtherNodes() {
        @Override
        public Optional<RemoteImage> open(ContentSource source, String transferId, Optional<String> basis) {
            return Optional.empty();
        }

        @Override
        public void release(String nodeId, String transferId) {}

        @Override
        public boolean modifyVolume(ControllerModifyVolumeRequest request) {
            handedOn.add(request);
            return elsewhere.contains(request.getVolumeId());
        }
    };

    @BeforeEach
    void start() {
        controller = new ControllerHarness(poolDir, PoolScope.nodeLocal("node-a"), otherNodes, Duration.ofSeconds(1));
    }

    @AfterEach
    void stop() {
        controller.close();
    }

    private static ControllerModifyVolumeRequest preallocate(String volumeId) {
        return ControllerModifyVolumeRequest.newBuilder()
                .setVolumeId(volumeId)
                .putMutableParams("allocation", "preallocated")
                .build();
    }

    @Test
    void itIsAdvertisedWhereTheOtherNodesAreReached() {
        assertThat(controller
                        .stub()
                        .controllerGetCapabilities(ControllerGetCapabilitiesRequest.getDefaultInstance())
                        .getCapabilitiesList())
                .extracting(c -> c.getRpc().getType())
                .contains(Type.MODIFY_VOLUME)
                .doesNotContain(Type.PUBLISH_UNPUBLISH_VOLUME, Type.EXPAND_VOLUME);
        assertThat(ControllerService.capabilities(PoolScope.nodeLocal("node-a"), false))
                .doesNotContain(Type.MODIFY_VOLUME);
    }

    @Test
    void aVolumeOfThisNodesPoolIsChangedHereAndHandedToNoOne() {
        String here = controller
                .stub()
                .createVolume(createRequest("pvc-here", MIB).build())
                .getVolume()
                .getVolumeId();

        controller.stub().controllerModifyVolume(preallocate(here));

        assertThat(controller.pool().volumes().get(here).allocation()).isEqualTo(Allocation.PREALLOCATED);
        assertThat(handedOn).isEmpty();
    }

    @Test
    void aVolumeOfAnotherNodesPoolIsHandedToItOnce() {
        String there = Ids.volumeIdFor("pvc-on-node-b");

        controller.stub().controllerModifyVolume(preallocate(there));

        assertThat(handedOn).containsExactly(preallocate(there));
        assertThat(controller.pool().volumes().find(there)).isEmpty();
    }

    @Test
    void aVolumeOfNoNodesPoolIsNotFound() {
        String nowhere = Ids.volumeIdFor("pvc-nowhere");

        var e = failure(() -> controller.stub().controllerModifyVolume(preallocate(nowhere)), Status.Code.NOT_FOUND);

        assertThat(e.getStatus().getDescription()).contains(nowhere);
        assertThat(handedOn).hasSize(1);
    }

    @Test
    void aKeyNoVolumeTakesIsRefusedBeforeAnyNodeIsAsked() {
        failure(
                () -> controller
                        .stub()
                        .controllerModifyVolume(ControllerModifyVolumeRequest.newBuilder()
                                .setVolumeId(Ids.volumeIdFor("pvc-on-node-b"))
                                .putMutableParams("iops", "100")
                                .build()),
                Status.Code.INVALID_ARGUMENT);
        assertThat(handedOn).isEmpty();
    }

    @Test
    void whatAnotherNodeHandsHereIsAppliedHereOrNotFoundNeverHandedOn() {
        ControllerService service = controller.service();

        var e = org.assertj.core.api.Assertions.catchThrowable(
                () -> service.modifyHere(preallocate(Ids.volumeIdFor("pvc-on-node-b"))));

        assertThat(e).hasMessageContaining("does not exist");
        assertThat(handedOn).isEmpty();
    }
}
