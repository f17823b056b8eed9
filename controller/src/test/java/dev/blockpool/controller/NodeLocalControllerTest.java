package dev.blockpool.controller;

import static dev.blockpool.controller.ControllerHarness.MIB;
import static dev.blockpool.controller.ControllerHarness.createRequest;
import static dev.blockpool.controller.ControllerHarness.fromSnapshot;
import static dev.blockpool.controller.ControllerHarness.fromVolume;
import static dev.blockpool.controller.ControllerHarness.singleWriter;
import static dev.blockpool.csi.StatusAssertions.failure;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import csi.v1.Csi.ControllerExpandVolumeRequest;
import csi.v1.Csi.ControllerGetCapabilitiesRequest;
import csi.v1.Csi.ControllerModifyVolumeRequest;
import csi.v1.Csi.ControllerPublishVolumeRequest;
import csi.v1.Csi.ControllerServiceCapability.RPC.Type;
import csi.v1.Csi.ControllerUnpublishVolumeRequest;
import csi.v1.Csi.CreateSnapshotRequest;
import csi.v1.Csi.CreateVolumeRequest;
import csi.v1.Csi.DeleteSnapshotRequest;
import csi.v1.Csi.DeleteVolumeRequest;
import csi.v1.Csi.GetCapacityRequest;
import csi.v1.Csi.ListSnapshotsRequest;
import csi.v1.Csi.ListVolumesRequest;
import csi.v1.Csi.Snapshot;
import csi.v1.Csi.Topology;
import csi.v1.Csi.TopologyRequirement;
import csi.v1.Csi.Volume;
import dev.blockpool.csi.CsiException;
import dev.blockpool.csi.PoolScope;
import dev.blockpool.pool.Ids;
import io.grpc.Status;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A controller on its node's own pool (--pool-scope node): what the CO's topology can and cannot ask of it. */
class NodeLocalControllerTest {

    private static final String NODE = "node-a";
    private static final Topology HERE = topology(NODE);
    private static final Topology ELSEWHERE = topology("node-b");

    @TempDir
    Path poolDir;

    private ControllerHarness controller;
    /** What holds each volume on this node, as the node's host would say; nothing unless a test says. */
    private final Map<String, String> held = new ConcurrentHashMap<>();
    /** The volumes whose holders were asked for. */
    private final List<String> asked = new CopyOnWriteArrayList<>();

    @BeforeEach
    void start() {
        controller = new ControllerHarness(poolDir, PoolScope.nodeLocal(NODE), volume -> {
            asked.add(volume.id());
            return Optional.ofNullable(held.get(volume.id()));
        });
    }

    @AfterEach
    void stop() {
        controller.close();
    }

    private static Topology topology(String node) {
        return Topology.newBuilder()
                .putSegments("topology.blockpool.csi.dev/node", node)
                .build();
    }

    private static TopologyRequirement requisite(Topology... topologies) {
        return TopologyRequirement.newBuilder()
                .addAllRequisite(java.util.List.of(topologies))
                .addAllPreferred(java.util.List.of(topologies))
                .build();
    }

    private long capacity(GetCapacityRequest.Builder request) {
        return controller.stub().getCapacity(request.build()).getAvailableCapacity();
    }

    /** CreateVolume of {@code request} fails with {@code code}. */
    private io.grpc.StatusRuntimeException refused(CreateVolumeRequest.Builder request, Status.Code code) {
        return failure(() -> controller.stub().createVolume(request.build()), code);
    }

    private long poolImages() throws IOException {
        try (Stream<Path> files = Files.list(poolDir.resolve("volumes"))) {
            return files.count();
        }
    }

    @Test
    void aVolumeForThisNodeIsMadeHereAndPinnedHere() {
        Volume volume = controller
                .stub()
                .createVolume(createRequest("pvc-here", MIB)
                        .setAccessibilityRequirements(requisite(ELSEWHERE, HERE))
                        .build())
                .getVolume();

        assertThat(volume.getAccessibleTopologyList()).containsExactly(HERE);
        assertThat(controller
                        .stub()
                        .listVolumes(ListVolumesRequest.getDefaultInstance())
                        .getEntries(0)
                        .getVolume()
                        .getAccessibleTopologyList())
                .containsExactly(HERE);
    }

    @Test
    void aVolumeRequiredElsewhereIsResourceExhaustedAndNothingIsMade() throws IOException {
        var e = refused(
                createRequest("pvc-there", MIB).setAccessibilityRequirements(requisite(ELSEWHERE)),
                Status.Code.RESOURCE_EXHAUSTED);

        assertThat(e.getStatus().getDescription()).contains("node-a", "node-b");
        assertThat(poolImages()).isZero();
    }

    @Test
    void preferredTopologiesAloneAlsoPlaceTheVolume() {
        TopologyRequirement preferredElsewhere =
                TopologyRequirement.newBuilder().addPreferred(ELSEWHERE).build();
        refused(
                createRequest("pvc-pref", MIB).setAccessibilityRequirements(preferredElsewhere),
                Status.Code.RESOURCE_EXHAUSTED);

        Volume anywhere = controller
                .stub()
                .createVolume(createRequest("pvc-any", MIB).build())
                .getVolume();
        assertThat(anywhere.getAccessibleTopologyList()).containsExactly(HERE);
    }

    @Test
    void aTopologyWithSegmentsThisNodeDoesNotHaveIsNotThisNode() {
        Topology zoned = HERE.toBuilder()
                .putSegments("topology.kubernetes.io/zone", "z1")
                .build();
        refused(
                createRequest("pvc-zoned", MIB).setAccessibilityRequirements(requisite(zoned)),
                Status.Code.RESOURCE_EXHAUSTED);
    }

    @Test
    void capacityIsThePoolsForThisNodeAndNoneForAnother() {
        long here = capacity(GetCapacityRequest.newBuilder().setAccessibleTopology(HERE));
        long unasked = capacity(GetCapacityRequest.newBuilder());
        long there = capacity(GetCapacityRequest.newBuilder().setAccessibleTopology(ELSEWHERE));

        assertThat(here).isPositive();
        assertThat(unasked).isPositive();
        assertThat(there).isZero();
    }

    @Test
    void aRestoreOrCloneWhoseSourceIsNotHereIsRescheduledWhenTheNodeWasChosen() throws IOException {
        String missingSnapshot = Ids.snapshotIdFor("on-another-node");
        String missingVolume = Ids.volumeIdFor("on-another-node");

        var restore = refused(
                createRequest("pvc-restore", MIB)
                        .setVolumeContentSource(fromSnapshot(missingSnapshot))
                        .setAccessibilityRequirements(requisite(HERE)),
                Status.Code.RESOURCE_EXHAUSTED);
        assertThat(restore.getStatus().getDescription()).contains("node-a", "topology.blockpool.csi.dev/node");
        refused(
                createRequest("pvc-clone", MIB)
                        .setVolumeContentSource(fromVolume(missingVolume))
                        .setAccessibilityRequirements(requisite(HERE)),
                Status.Code.RESOURCE_EXHAUSTED);
        // Asked without a placement, a source that is not here is simply not found.
        refused(
                createRequest("pvc-restore", MIB).setVolumeContentSource(fromSnapshot(missingSnapshot)),
                Status.Code.NOT_FOUND);
        assertThat(poolImages()).isZero();
    }

    @Test
    void aRestoreOfASnapshotHereIsMadeHere() {
        String snapshot = snapshotOf(createVolume("pvc-source"), "snap");

        Volume restored = controller
                .stub()
                .createVolume(createRequest("pvc-restored", MIB)
                        .setVolumeContentSource(fromSnapshot(snapshot))
                        .setAccessibilityRequirements(requisite(HERE))
                        .build())
                .getVolume();
        assertThat(restored.getAccessibleTopologyList()).containsExactly(HERE);
    }

    /**
     * A snapshot is in its volume's pool: it says so (SNAPSHOT_ACCESSIBILITY_CONSTRAINTS) wherever it
     * is shown, and one required elsewhere is refused before anything is made.
     */
    @Test
    void aSnapshotIsPinnedToThisNodeAndOneRequiredElsewhereIsRefused() throws IOException {
        String volumeId = createVolume("pvc-snapped");
        Snapshot snapshot = controller
                .stub()
                .createSnapshot(CreateSnapshotRequest.newBuilder()
                        .setName("snap-here")
                        .setSourceVolumeId(volumeId)
                        .setAccessibilityRequirements(requisite(HERE))
                        .build())
                .getSnapshot();
        assertThat(snapshot.getAccessibleTopologyList()).containsExactly(HERE);
        assertThat(controller
                        .stub()
                        .listSnapshots(ListSnapshotsRequest.getDefaultInstance())
                        .getEntries(0)
                        .getSnapshot()
                        .getAccessibleTopologyList())
                .containsExactly(HERE);

        var e = failure(
                () -> controller
                        .stub()
                        .createSnapshot(CreateSnapshotRequest.newBuilder()
                                .setName("snap-there")
                                .setSourceVolumeId(volumeId)
                                .setAccessibilityRequirements(requisite(ELSEWHERE))
                                .build()),
                Status.Code.RESOURCE_EXHAUSTED);
        assertThat(e.getStatus().getDescription()).contains("snapshot", "node-a", "node-b");
        try (Stream<Path> files = Files.list(poolDir.resolve("snapshots"))) {
            assertThat(files.filter(f -> f.toString().endsWith(".img"))).hasSize(1);
        }
    }

    /**
     * Nothing is attached on a node-local pool: a volume staged or published on its node is in
     * use by what holds it there, and its delete waits until it is unstaged. A volume already
     * gone is deleted, whatever is said to hold it; its snapshots are not held by it.
     */
    @Test
    void aVolumeHeldOnThisNodeIsDeletedOnlyOnceNothingHoldsIt() {
        String id = createVolume("pvc-staged");
        String snapshot = snapshotOf(id, "snap-of-staged");
        held.put(id, "/dev/loop7, mounted at [/var/lib/kubelet/staging]");

        var refused = failure(() -> delete(id), Status.Code.FAILED_PRECONDITION);
        assertThat(refused.getStatus().getDescription())
                .contains(
                        id, "in use on node " + NODE, "/dev/loop7", "/var/lib/kubelet/staging", "once it is unstaged");
        assertThat(controller.pool().volumes().find(id)).isPresent();
        assertThat(Files.exists(controller.pool().volumes().imagePath(id))).isTrue();
        controller
                .stub()
                .deleteSnapshot(DeleteSnapshotRequest.newBuilder()
                        .setSnapshotId(snapshot)
                        .build());

        held.remove(id);
        delete(id);
        assertThat(controller.pool().volumes().find(id)).isEmpty();
        held.put(id, "/dev/loop7, mounted nowhere"); // a device of a former image of the name
        asked.clear();
        delete(id);
        assertThat(asked).as("a volume already gone is not looked for").isEmpty();
    }

    /**
     * A volume that moved to another node is retired here as it is deleted: refused while it is
     * staged or published on this node (its pod still runs here), then gone; again, nothing.
     */
    @Test
    void aMovedVolumeIsRetiredOnlyOnceNothingHoldsItHere() {
        String id = createVolume("pvc-moved");
        held.put(id, "/dev/loop7, mounted at [/var/lib/kubelet/staging]");

        assertThat(controller.service().holderHere(id)).contains(held.get(id));
        assertThatThrownBy(() -> controller.service().retireHere(id, "node-b"))
                .isInstanceOfSatisfying(
                        CsiException.class, e -> assertThat(e.code()).isEqualTo(Status.Code.FAILED_PRECONDITION))
                .hasMessageContaining("in use on node " + NODE)
                .hasMessageContaining("/dev/loop7");
        assertThat(controller.pool().volumes().find(id)).isPresent();

        held.remove(id);
        controller.service().retireHere(id, "node-b");
        controller.service().retireHere(id, "node-b");
        assertThat(controller.pool().volumes().find(id)).isEmpty();
        assertThat(controller.service().holderHere(id)).isEmpty();
    }

    private String createVolume(String name) {
        return controller
                .stub()
                .createVolume(createRequest(name, MIB).build())
                .getVolume()
                .getVolumeId();
    }

    private String snapshotOf(String volumeId, String name) {
        return controller
                .stub()
                .createSnapshot(CreateSnapshotRequest.newBuilder()
                        .setName(name)
                        .setSourceVolumeId(volumeId)
                        .build())
                .getSnapshot()
                .getSnapshotId();
    }

    private void delete(String volumeId) {
        controller
                .stub()
                .deleteVolume(
                        DeleteVolumeRequest.newBuilder().setVolumeId(volumeId).build());
    }

    @Test
    void whatOneClusterWideSidecarWouldCallIsNeitherAdvertisedNorServed() {
        assertThat(controller
                        .stub()
                        .controllerGetCapabilities(ControllerGetCapabilitiesRequest.getDefaultInstance())
                        .getCapabilitiesList())
                .extracting(c -> c.getRpc().getType())
                .contains(Type.CREATE_DELETE_VOLUME, Type.GET_CAPACITY, Type.CREATE_DELETE_SNAPSHOT, Type.CLONE_VOLUME)
                .doesNotContain(
                        Type.PUBLISH_UNPUBLISH_VOLUME,
                        Type.PUBLISH_READONLY,
                        Type.LIST_VOLUMES_PUBLISHED_NODES,
                        Type.EXPAND_VOLUME,
                        Type.MODIFY_VOLUME);
        String id = controller
                .stub()
                .createVolume(createRequest("pvc-x", MIB).build())
                .getVolume()
                .getVolumeId();

        failure(
                () -> controller
                        .stub()
                        .controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder()
                                .setVolumeId(id)
                                .setNodeId(NODE)
                                .setVolumeCapability(singleWriter())
                                .build()),
                Status.Code.UNIMPLEMENTED);
        failure(
                () -> controller
                        .stub()
                        .controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder()
                                .setVolumeId(id)
                                .build()),
                Status.Code.UNIMPLEMENTED);
        failure(
                () -> controller
                        .stub()
                        .controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder()
                                .setVolumeId(id)
                                .build()),
                Status.Code.UNIMPLEMENTED);
        failure(
                () -> controller
                        .stub()
                        .controllerModifyVolume(ControllerModifyVolumeRequest.newBuilder()
                                .setVolumeId(id)
                                .build()),
                Status.Code.UNIMPLEMENTED);
    }

    @Test
    void aSharedPoolOffersEveryCall() {
        assertThat(ControllerService.capabilities(PoolScope.shared(), false)).isEqualTo(ControllerService.CAPABILITIES);
        assertThat(ControllerService.CAPABILITIES).containsAll(ControllerService.CLUSTER_WIDE);
    }
}
