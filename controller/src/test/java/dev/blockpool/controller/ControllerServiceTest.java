package dev.blockpool.controller;

import static dev.blockpool.controller.ControllerHarness.MIB;
import static dev.blockpool.controller.ControllerHarness.createRequest;
import static dev.blockpool.controller.ControllerHarness.fromSnapshot;
import static dev.blockpool.controller.ControllerHarness.fromVolume;
import static dev.blockpool.controller.ControllerHarness.singleWriter;
import static dev.blockpool.csi.CsiRequests.block;
import static dev.blockpool.csi.CsiRequests.mount;
import static dev.blockpool.csi.StatusAssertions.failure;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Message;
import csi.v1.Csi.CapacityRange;
import csi.v1.Csi.ControllerExpandVolumeRequest;
import csi.v1.Csi.ControllerExpandVolumeResponse;
import csi.v1.Csi.ControllerGetCapabilitiesRequest;
import csi.v1.Csi.ControllerGetVolumeHealthRequest;
import csi.v1.Csi.ControllerGetVolumeRequest;
import csi.v1.Csi.ControllerListVolumeHealthRequest;
import csi.v1.Csi.ControllerModifyVolumeRequest;
import csi.v1.Csi.ControllerPublishVolumeRequest;
import csi.v1.Csi.ControllerServiceCapability;
import csi.v1.Csi.ControllerServiceCapability.RPC.Type;
import csi.v1.Csi.ControllerUnpublishVolumeRequest;
import csi.v1.Csi.CreateSnapshotRequest;
import csi.v1.Csi.CreateVolumeRequest;
import csi.v1.Csi.DeleteSnapshotRequest;
import csi.v1.Csi.DeleteVolumeRequest;
import csi.v1.Csi.GetCapacityRequest;
import csi.v1.Csi.GetCapacityResponse;
import csi.v1.Csi.GetSnapshotRequest;
import csi.v1.Csi.ListSnapshotsRequest;
import csi.v1.Csi.ListSnapshotsResponse;
import csi.v1.Csi.ListVolumesRequest;
import csi.v1.Csi.ListVolumesResponse;
import csi.v1.Csi.Snapshot;
import csi.v1.Csi.Topology;
import csi.v1.Csi.TopologyRequirement;
import csi.v1.Csi.ValidateVolumeCapabilitiesRequest;
import csi.v1.Csi.ValidateVolumeCapabilitiesResponse;
import csi.v1.Csi.Volume;
import csi.v1.Csi.VolumeCapability;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import csi.v1.Csi.VolumeHealth;
import csi.v1.Csi.VolumeHealthErrorType;
import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.csi.CsiCalls;
import dev.blockpool.csi.Sizes;
import dev.blockpool.pool.Allocation;
import dev.blockpool.pool.Ids;
import dev.blockpool.pool.NodeRecord;
import io.grpc.Status;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The Controller service over gRPC on a pool in a temporary directory: codes, durability, concurrency. */
class ControllerServiceTest {

    @TempDir
    Path poolDir;

    private ControllerHarness controller;

    @BeforeEach
    void start() {
        controller = new ControllerHarness(poolDir);
    }

    @AfterEach
    void stop() {
        controller.close();
    }

    private Volume create(String name, long bytes) {
        return controller
                .stub()
                .createVolume(createRequest(name, bytes).build())
                .getVolume();
    }

    private void register(String nodeId, long maxVolumes) {
        controller
                .pool()
                .nodes()
                .register(new NodeRecord(nodeId, maxVolumes, Map.of("topology.blockpool.csi.dev/node", nodeId)));
    }

    private static ControllerPublishVolumeRequest publish(
            String volumeId, String nodeId, boolean readonly, VolumeCapability capability) {
        return ControllerPublishVolumeRequest.newBuilder()
                .setVolumeId(volumeId)
                .setNodeId(nodeId)
                .setReadonly(readonly)
                .setVolumeCapability(capability)
                .build();
    }

    private static ControllerUnpublishVolumeRequest unpublish(String volumeId, String nodeId) {
        return ControllerUnpublishVolumeRequest.newBuilder()
                .setVolumeId(volumeId)
                .setNodeId(nodeId)
                .build();
    }

    private static DeleteVolumeRequest delete(String volumeId) {
        return DeleteVolumeRequest.newBuilder().setVolumeId(volumeId).build();
    }

    private static CreateSnapshotRequest snapshot(String name, String sourceVolumeId) {
        return CreateSnapshotRequest.newBuilder()
                .setName(name)
                .setSourceVolumeId(sourceVolumeId)
                .build();
    }

    private List<String> poolFiles(String dir) throws IOException {
        try (Stream<Path> files = Files.list(poolDir.resolve(dir))) {
            return files.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    // ---- CreateVolume / DeleteVolume ----

    /**
     * A second controller on the same pool (another process, on this host or another: its own
     * pool and locks in memory) may read but not change it while the first acts, and says who
     * holds it; it takes over once the first stops.
     */
    @Test
    void aSecondControllerStandsByUntilTheFirstStops() {
        try (ControllerHarness second = new ControllerHarness(poolDir)) {
            controller.stub().createVolume(createRequest("first", MIB).build());
            assertThat(failure(
                                    () -> second.stub()
                                            .createVolume(
                                                    createRequest("second", MIB).build()),
                                    Status.Code.FAILED_PRECONDITION)
                            .getStatus()
                            .getDescription())
                    .contains("another controller acts on the pool (pid "
                            + ProcessHandle.current().pid());
            assertThat(second.stub()
                            .listVolumes(ListVolumesRequest.getDefaultInstance())
                            .getEntriesList())
                    .hasSize(1);

            controller.close();
            second.stub().createVolume(createRequest("second", MIB).build());
            assertThat(second.stub()
                            .listVolumes(ListVolumesRequest.getDefaultInstance())
                            .getEntriesList())
                    .hasSize(2);
        }
    }

    @Test
    void aFilesystemVolumeIsAtLeastWhatItsMkfsAcceptsABlockVolumeIsAsAsked() {
        Volume xfs = controller
                .stub()
                .createVolume(createRequest("pvc-small-xfs", 10 * MIB)
                        .putParameters("fsType", "xfs")
                        .build())
                .getVolume();
        assertThat(xfs.getCapacityBytes()).isEqualTo(300 * MIB);
        Volume raw = controller
                .stub()
                .createVolume(createRequest("pvc-small-raw", 10 * MIB)
                        .putParameters("fsType", "xfs")
                        .clearVolumeCapabilities()
                        .addVolumeCapabilities(block(Mode.SINGLE_NODE_WRITER))
                        .build())
                .getVolume();
        assertThat(raw.getCapacityBytes()).isEqualTo(10 * MIB);
        failure(
                () -> controller
                        .stub()
                        .createVolume(createRequest("pvc-limited-xfs", 10 * MIB)
                                .putParameters("fsType", "xfs")
                                .setCapacityRange(csi.v1.Csi.CapacityRange.newBuilder()
                                        .setRequiredBytes(10 * MIB)
                                        .setLimitBytes(100 * MIB))
                                .build()),
                Status.Code.OUT_OF_RANGE);
    }

    @Test
    void createVolumeMakesASparseImageOfExactlyTheSizeReturned() throws IOException {
        Volume volume = controller
                .stub()
                .createVolume(createRequest("pvc-a", 400 * MIB)
                        .putParameters("fsType", "xfs")
                        .build())
                .getVolume();

        assertThat(volume.getVolumeId()).matches("vol-[0-9a-f]{32}");
        assertThat(volume.getCapacityBytes()).isEqualTo(400 * MIB);
        assertThat(volume.getVolumeContextMap()).containsEntry("fsType", "xfs");
        assertThat(poolDir.resolve("volumes").resolve(volume.getVolumeId() + ".img"))
                .hasSize(400 * MIB);
        assertThat(poolFiles("volumes")).containsExactly(volume.getVolumeId() + ".img", volume.getVolumeId() + ".json");
    }

    @Test
    void aRestartBetweenTwoCreatesWithOneNameGivesTheSameVolume() {
        Volume first = create("pvc-restart", 4 * MIB);
        controller.restart();
        Volume second = create("pvc-restart", 4 * MIB);

        assertThat(second).isEqualTo(first);
        assertThat(controller
                        .stub()
                        .listVolumes(ListVolumesRequest.getDefaultInstance())
                        .getEntriesList())
                .hasSize(1);
    }

    @Test
    void theSameNameWithOtherArgumentsAlreadyExistsAlsoAfterARestart() {
        create("pvc-size", 4 * MIB);

        failure(() -> create("pvc-size", 8 * MIB), Status.Code.ALREADY_EXISTS);
        failure(
                () -> controller
                        .stub()
                        .createVolume(createRequest("pvc-size", 4 * MIB)
                                .putParameters("fsType", "xfs")
                                .build()),
                Status.Code.ALREADY_EXISTS);
        controller.restart();
        failure(() -> create("pvc-size", 8 * MIB), Status.Code.ALREADY_EXISTS);
        assertThat(create("pvc-size", 4 * MIB).getCapacityBytes()).isEqualTo(4 * MIB);
    }

    @Test
    void startUpReconcileRemovesDebrisButNeverAVolumeWithMetadata() throws IOException {
        Volume kept = create("pvc-kept", 2 * MIB);
        Volume damaged = create("pvc-damaged", 2 * MIB);
        Path volumes = poolDir.resolve("volumes");
        Path halfCreated = volumes.resolve(Ids.volumeIdFor("pvc-half") + ".img");
        Path halfSnapshot = poolDir.resolve("snapshots").resolve(Ids.snapshotIdFor("snap-half") + ".img");
        Path staleTemp = volumes.resolve(kept.getVolumeId() + ".json.123-45.tmp");
        Path staleNodeTemp = poolDir.resolve("nodes").resolve("node-1.json.123-46.tmp");
        Files.write(halfCreated, new byte[4096]);
        Files.write(halfSnapshot, new byte[4096]);
        Files.writeString(staleTemp, "{\"id\":");
        Files.writeString(staleNodeTemp, "{");
        Path damagedMetadata = volumes.resolve(damaged.getVolumeId() + ".json");
        Files.writeString(damagedMetadata, "{ not json");
        try (Stream<Path> all = Files.walk(poolDir)) {
            for (Path file : all.filter(Files::isRegularFile).toList()) {
                Files.setLastModifiedTime(file, FileTime.from(Instant.now().minusSeconds(60)));
            }
        }

        controller.restart();

        assertThat(halfCreated).doesNotExist();
        assertThat(halfSnapshot).doesNotExist();
        assertThat(staleTemp).doesNotExist();
        assertThat(staleNodeTemp).doesNotExist();
        assertThat(volumes.resolve(kept.getVolumeId() + ".img")).hasSize(2 * MIB);
        assertThat(volumes.resolve(damaged.getVolumeId() + ".img"))
                .as("image whose record is unreadable")
                .hasSize(2 * MIB);
        assertThat(damagedMetadata).hasContent("{ not json");
        assertThat(controller
                        .stub()
                        .listVolumes(ListVolumesRequest.getDefaultInstance())
                        .getEntriesList())
                .extracting(e -> e.getVolume().getVolumeId())
                .containsExactly(kept.getVolumeId());
        // the interrupted create can simply be retried
        assertThat(create("pvc-half", 2 * MIB).getVolumeId()).isEqualTo(Ids.volumeIdFor("pvc-half"));
    }

    @Test
    void twentyFourConcurrentCreatesWithOneNameMakeOneVolume() throws Exception {
        List<Status.Code> codes = new ArrayList<>();
        List<String> ids = new ArrayList<>();
        runConcurrently(24, i -> {
            try {
                String id = create("pvc-race", 16 * MIB).getVolumeId();
                synchronized (ids) {
                    ids.add(id);
                    codes.add(Status.Code.OK);
                }
            } catch (io.grpc.StatusRuntimeException e) {
                synchronized (ids) {
                    codes.add(e.getStatus().getCode());
                }
            }
        });

        // Told to retry, or answered the one volume: whether any call had to wait depends on timing.
        assertThat(codes)
                .hasSize(24)
                .isSubsetOf(Status.Code.OK, Status.Code.ABORTED)
                .contains(Status.Code.OK);
        assertThat(ids).containsOnly(Ids.volumeIdFor("pvc-race"));
        assertThat(poolFiles("volumes"))
                .containsExactly(Ids.volumeIdFor("pvc-race") + ".img", Ids.volumeIdFor("pvc-race") + ".json");
        // every caller that was told to retry gets the same volume when it does
        assertThat(create("pvc-race", 16 * MIB).getVolumeId()).isEqualTo(Ids.volumeIdFor("pvc-race"));
    }

    @Test
    void twentyFourConcurrentCreatesWithDifferentNamesAllSucceed() throws Exception {
        List<String> ids = java.util.Collections.synchronizedList(new ArrayList<>());
        runConcurrently(24, i -> ids.add(create("pvc-" + i, 8 * MIB).getVolumeId()));

        assertThat(ids).hasSize(24).doesNotHaveDuplicates();
        assertThat(poolFiles("volumes")).hasSize(48).noneMatch(n -> n.endsWith(".tmp"));
        assertThat(controller
                        .stub()
                        .listVolumes(ListVolumesRequest.getDefaultInstance())
                        .getEntriesCount())
                .isEqualTo(24);
    }

    @Test
    void aSecondOperationOnABusyVolumeIsAbortedWhileOtherVolumesProceed() throws Exception {
        GatedCommandRunner gated = new GatedCommandRunner();
        controller.close();
        controller = new ControllerHarness(poolDir, gated);
        Volume source = create("pvc-busy", 4 * MIB);

        gated.closeGate();
        CompletableFuture<Snapshot> snapshotting = CompletableFuture.supplyAsync(() -> controller
                .stub()
                .createSnapshot(snapshot("snap-busy", source.getVolumeId()))
                .getSnapshot());
        assertThat(gated.entered.await(30, TimeUnit.SECONDS))
                .as("the snapshot copy started")
                .isTrue();
        try {
            failure(() -> controller.stub().deleteVolume(delete(source.getVolumeId())), Status.Code.ABORTED);
            failure(
                    () -> controller.stub().createSnapshot(snapshot("snap-busy", source.getVolumeId())),
                    Status.Code.ABORTED);
            failure(
                    () -> controller
                            .stub()
                            .controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder()
                                    .setVolumeId(source.getVolumeId())
                                    .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(8 * MIB))
                                    .build()),
                    Status.Code.ABORTED);
            assertThat(create("pvc-other", 4 * MIB).getCapacityBytes())
                    .as("another volume proceeds")
                    .isEqualTo(4 * MIB);
        } finally {
            gated.release.countDown();
        }
        assertThat(snapshotting.get(30, TimeUnit.SECONDS).getSourceVolumeId()).isEqualTo(source.getVolumeId());
        controller.stub().deleteVolume(delete(source.getVolumeId()));
        assertThat(controller.pool().volumes().find(source.getVolumeId())).isEmpty();
    }

    static Stream<Arguments> createRequestsThatCannotBeMade() {
        return Stream.of(
                Arguments.of("no name", createRequest("", MIB).build(), Status.Code.INVALID_ARGUMENT),
                Arguments.of(
                        "no capability",
                        createRequest("pvc", MIB).clearVolumeCapabilities().build(),
                        Status.Code.INVALID_ARGUMENT),
                Arguments.of(
                        "many nodes writing",
                        createRequest("pvc", MIB)
                                .clearVolumeCapabilities()
                                .addVolumeCapabilities(mount(Mode.MULTI_NODE_MULTI_WRITER))
                                .build(),
                        Status.Code.INVALID_ARGUMENT),
                Arguments.of(
                        "an unknown parameter",
                        createRequest("pvc", MIB).putParameters("replicas", "3").build(),
                        Status.Code.INVALID_ARGUMENT),
                Arguments.of(
                        "an unknown allocation",
                        createRequest("pvc", MIB)
                                .putParameters("allocation", "thick")
                                .build(),
                        Status.Code.INVALID_ARGUMENT),
                Arguments.of(
                        "an unknown parameter of its VolumeAttributesClass",
                        createRequest("pvc", MIB)
                                .putMutableParams("XXX_FakeKey", "x")
                                .build(),
                        Status.Code.INVALID_ARGUMENT),
                Arguments.of(
                        "a limit below the required size",
                        createRequest("pvc", MIB)
                                .setCapacityRange(CapacityRange.newBuilder()
                                        .setRequiredBytes(2 * MIB)
                                        .setLimitBytes(MIB))
                                .build(),
                        Status.Code.OUT_OF_RANGE),
                Arguments.of(
                        "more than the pool can hold",
                        createRequest("pvc", 1L << 60).build(),
                        Status.Code.OUT_OF_RANGE));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("createRequestsThatCannotBeMade")
    void createVolumeRefusesWhatItCannotMakeAndMakesNothing(
            String what, CreateVolumeRequest request, Status.Code code) {
        failure(() -> controller.stub().createVolume(request), code);
        assertThat(controller
                        .stub()
                        .listVolumes(ListVolumesRequest.getDefaultInstance())
                        .getEntriesList())
                .isEmpty();
    }

    /** The volume the requests of the two rules below name when they need one that exists; and one that does not. */
    private static final String THERE = Ids.volumeIdFor("pvc-there");

    private static final String NOWHERE = Ids.volumeIdFor("nope");

    private void aVolumeAndANodeThatAreThere() {
        assertThat(create("pvc-there", MIB).getVolumeId()).isEqualTo(THERE);
        register("node-1", 8);
    }

    static Stream<Arguments> requestsMissingAField() {
        return Stream.of(
                Arguments.of("delete without a volume ID", delete("")),
                Arguments.of("publish without a node ID", publish(THERE, "", false, singleWriter())),
                Arguments.of(
                        "publish without a capability",
                        ControllerPublishVolumeRequest.newBuilder()
                                .setVolumeId(THERE)
                                .setNodeId("node-1")
                                .build()),
                Arguments.of(
                        "validate without a capability",
                        ValidateVolumeCapabilitiesRequest.newBuilder()
                                .setVolumeId(THERE)
                                .build()),
                Arguments.of(
                        "modify without a volume ID",
                        ControllerModifyVolumeRequest.newBuilder()
                                .putMutableParams("allocation", "sparse")
                                .build()),
                Arguments.of(
                        "expand without a capacity range",
                        ControllerExpandVolumeRequest.newBuilder()
                                .setVolumeId(THERE)
                                .build()),
                Arguments.of("snapshot without a name", snapshot("", THERE)),
                Arguments.of("snapshot without a source", snapshot("snap-2", "")));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("requestsMissingAField")
    void aRequestMissingAFieldItsMethodNeedsIsAnInvalidArgument(String what, Message request) {
        aVolumeAndANodeThatAreThere();
        failure(() -> CsiCalls.call(controller.stub().getChannel(), request), Status.Code.INVALID_ARGUMENT);
    }

    static Stream<Arguments> requestsNamingWhatIsNotThere() {
        return Stream.of(
                Arguments.of(
                        "publish to an unregistered node", publish(THERE, "node-unregistered", false, singleWriter())),
                Arguments.of("publish an unknown volume", publish(NOWHERE, "node-1", false, singleWriter())),
                Arguments.of(
                        "validate an unknown volume",
                        ValidateVolumeCapabilitiesRequest.newBuilder()
                                .setVolumeId(NOWHERE)
                                .addVolumeCapabilities(singleWriter())
                                .build()),
                Arguments.of(
                        "the health of an unknown volume",
                        ControllerGetVolumeHealthRequest.newBuilder()
                                .setVolumeId(NOWHERE)
                                .build()),
                Arguments.of(
                        "modify an unknown volume",
                        ControllerModifyVolumeRequest.newBuilder()
                                .setVolumeId(NOWHERE)
                                .putMutableParams("allocation", "sparse")
                                .build()),
                Arguments.of("expand an unknown volume", expand(NOWHERE, 8 * MIB)),
                Arguments.of("snapshot an unknown volume", snapshot("snap-2", NOWHERE)),
                Arguments.of(
                        "restore an unknown snapshot",
                        createRequest("pvc-x", 8 * MIB)
                                .setVolumeContentSource(fromSnapshot(Ids.snapshotIdFor("nope")))
                                .build()),
                Arguments.of(
                        "clone an unknown volume",
                        createRequest("pvc-x", 8 * MIB)
                                .setVolumeContentSource(fromVolume(NOWHERE))
                                .build()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("requestsNamingWhatIsNotThere")
    void aRequestNamingAVolumeSnapshotOrNodeThatIsNotThereIsNotFound(String what, Message request) {
        aVolumeAndANodeThatAreThere();
        failure(() -> CsiCalls.call(controller.stub().getChannel(), request), Status.Code.NOT_FOUND);
    }

    @Test
    void provisionerMetadataKeysBlockVolumesAndTopologyRequirementsAreAccepted() {
        Volume volume = controller
                .stub()
                .createVolume(CreateVolumeRequest.newBuilder()
                        .setName("pvc-block")
                        .addVolumeCapabilities(block(Mode.SINGLE_NODE_WRITER))
                        .putParameters("csi.storage.k8s.io/pvc/name", "data")
                        .putParameters("csi.storage.k8s.io/pvc/namespace", "default")
                        .putParameters("allocation", "sparse")
                        .setAccessibilityRequirements(TopologyRequirement.newBuilder()
                                .addPreferred(
                                        Topology.newBuilder().putSegments("topology.blockpool.csi.dev/node", "n1")))
                        .build())
                .getVolume();

        assertThat(volume.getCapacityBytes()).as("the default size").isEqualTo(Sizes.DEFAULT_BYTES);
        assertThat(volume.getAccessibleTopologyList())
                .as("volumes are not pinned to the node of their first pod")
                .isEmpty();
    }

    @Test
    void deleteVolumeIsIdempotent() {
        Volume volume = create("pvc-del", MIB);
        controller.stub().deleteVolume(delete(volume.getVolumeId()));
        controller.stub().deleteVolume(delete(volume.getVolumeId()));
        controller.stub().deleteVolume(delete(Ids.volumeIdFor("never-created")));
        assertThat(poolDir.resolve("volumes")).isEmptyDirectory();
    }

    // ---- ControllerPublish / Unpublish ----

    @Test
    void publishEnforcesNodesAccessModesAndTheAttachLimit() {
        register("node-1", 2);
        register("node-2", 8);
        String a = create("pvc-a", MIB).getVolumeId();
        String b = create("pvc-b", MIB).getVolumeId();
        String c = create("pvc-c", MIB).getVolumeId();
        var stub = controller.stub();

        assertThat(stub.controllerPublishVolume(publish(a, "node-1", false, singleWriter()))
                        .getPublishContextMap())
                .containsEntry("readonly", "false");
        stub.controllerPublishVolume(publish(a, "node-1", false, singleWriter())); // idempotent
        failure(
                () -> stub.controllerPublishVolume(publish(a, "node-1", true, singleWriter())),
                Status.Code.ALREADY_EXISTS);
        failure(
                () -> stub.controllerPublishVolume(publish(a, "node-2", false, singleWriter())),
                Status.Code.FAILED_PRECONDITION);

        VolumeCapability readers = mount(Mode.MULTI_NODE_READER_ONLY);
        assertThat(stub.controllerPublishVolume(publish(b, "node-1", true, readers))
                        .getPublishContextMap())
                .containsEntry("readonly", "true");
        stub.controllerPublishVolume(publish(b, "node-2", true, readers));

        failure(
                () -> stub.controllerPublishVolume(publish(c, "node-1", false, singleWriter())),
                Status.Code.RESOURCE_EXHAUSTED);
        stub.controllerPublishVolume(publish(a, "node-1", false, singleWriter())); // already counted: still OK
        stub.controllerPublishVolume(publish(c, "node-2", false, singleWriter()));

        failure(() -> stub.deleteVolume(delete(a)), Status.Code.FAILED_PRECONDITION);
        assertThat(poolDir.resolve("volumes").resolve(a + ".img")).exists();
    }

    @Test
    void aVolumePublishedSingleNodeAdmitsNoOtherNodeWhateverTheNewAccessMode() {
        register("node-1", 8);
        register("node-2", 8);
        String a = create("pvc-a", MIB).getVolumeId();
        var stub = controller.stub();
        stub.controllerPublishVolume(publish(a, "node-1", false, singleWriter()));

        var e = failure(
                () -> stub.controllerPublishVolume(publish(a, "node-2", true, mount(Mode.MULTI_NODE_READER_ONLY))),
                Status.Code.FAILED_PRECONDITION);
        assertThat(e.getStatus().getDescription()).contains("node-1");
        controller.restart();
        failure(
                () -> controller
                        .stub()
                        .controllerPublishVolume(publish(a, "node-2", true, mount(Mode.MULTI_NODE_READER_ONLY))),
                Status.Code.FAILED_PRECONDITION);
        assertThat(controller.pool().volumes().get(a).attachments())
                .extracting(a1 -> a1.nodeId())
                .containsExactly("node-1");

        // published to several readers, it takes more readers but no single-node writer
        String b = create("pvc-b", MIB).getVolumeId();
        controller.stub().controllerPublishVolume(publish(b, "node-1", true, mount(Mode.MULTI_NODE_READER_ONLY)));
        controller.stub().controllerPublishVolume(publish(b, "node-2", true, mount(Mode.MULTI_NODE_READER_ONLY)));
        register("node-3", 8);
        failure(
                () -> controller.stub().controllerPublishVolume(publish(b, "node-3", false, singleWriter())),
                Status.Code.FAILED_PRECONDITION);
    }

    @Test
    void attachmentsSurviveARestartAndShowInListings() {
        register("node-1", 2);
        register("node-2", 8);
        String a = create("pvc-a", MIB).getVolumeId();
        String b = create("pvc-b", MIB).getVolumeId();
        String c = create("pvc-c", MIB).getVolumeId();
        controller.stub().controllerPublishVolume(publish(a, "node-1", false, singleWriter()));
        controller.stub().controllerPublishVolume(publish(b, "node-1", true, mount(Mode.MULTI_NODE_READER_ONLY)));
        controller.stub().controllerPublishVolume(publish(b, "node-2", true, mount(Mode.MULTI_NODE_READER_ONLY)));

        controller.restart();
        var stub = controller.stub();

        Map<String, List<String>> published = new java.util.HashMap<>();
        stub.listVolumes(ListVolumesRequest.getDefaultInstance())
                .getEntriesList()
                .forEach(e ->
                        published.put(e.getVolume().getVolumeId(), e.getStatus().getPublishedNodeIdsList()));
        assertThat(published)
                .containsOnly(
                        Map.entry(a, List.of("node-1")),
                        Map.entry(b, List.of("node-1", "node-2")),
                        Map.entry(c, List.of()));
        assertThat(stub.controllerGetVolume(ControllerGetVolumeRequest.newBuilder()
                                .setVolumeId(a)
                                .build())
                        .getStatus()
                        .getPublishedNodeIdsList())
                .containsExactly("node-1");

        failure(
                () -> stub.controllerPublishVolume(publish(a, "node-2", false, singleWriter())),
                Status.Code.FAILED_PRECONDITION);
        failure(
                () -> stub.controllerPublishVolume(publish(c, "node-1", false, singleWriter())),
                Status.Code.RESOURCE_EXHAUSTED);
        failure(() -> stub.deleteVolume(delete(a)), Status.Code.FAILED_PRECONDITION);

        stub.controllerUnpublishVolume(unpublish(a, "node-1"));
        stub.controllerUnpublishVolume(unpublish(a, "node-1")); // idempotent
        stub.controllerUnpublishVolume(unpublish(Ids.volumeIdFor("gone"), "node-1"));
        stub.controllerPublishVolume(publish(c, "node-1", false, singleWriter())); // room again on node-1
        stub.controllerUnpublishVolume(
                ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(b).build());
        assertThat(controller.pool().volumes().get(b).attachments())
                .as("no node_id: unpublished everywhere")
                .isEmpty();
        stub.deleteVolume(delete(a));
        stub.deleteVolume(delete(b));
        assertThat(controller.pool().volumes().find(a)).isEmpty();
    }

    // ---- Validate, List, GetVolume, GetCapacity, Expand, capabilities ----

    @Test
    void validateVolumeCapabilitiesConfirmsOnlyWhatTheDriverCanDo() {
        String id = create("pvc-v", MIB).getVolumeId();
        ValidateVolumeCapabilitiesResponse ok = controller
                .stub()
                .validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest.newBuilder()
                        .setVolumeId(id)
                        .addVolumeCapabilities(singleWriter())
                        .build());
        assertThat(ok.getConfirmed().getVolumeCapabilitiesList()).containsExactly(singleWriter());

        ValidateVolumeCapabilitiesResponse refused = controller
                .stub()
                .validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest.newBuilder()
                        .setVolumeId(id)
                        .addVolumeCapabilities(mount(Mode.MULTI_NODE_MULTI_WRITER))
                        .build());
        assertThat(refused.hasConfirmed()).isFalse();
        assertThat(refused.getMessage()).isNotBlank();

        VolumeCapability xfs = VolumeCapability.newBuilder()
                .setMount(VolumeCapability.MountVolume.newBuilder().setFsType("xfs"))
                .setAccessMode(singleWriter().getAccessMode())
                .build();
        ValidateVolumeCapabilitiesResponse otherFs = controller
                .stub()
                .validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest.newBuilder()
                        .setVolumeId(id)
                        .addVolumeCapabilities(xfs)
                        .build());
        assertThat(otherFs.hasConfirmed())
                .as("an ext4 volume cannot be mounted as xfs")
                .isFalse();
        assertThat(otherFs.getMessage()).contains("ext4").contains("xfs");
    }

    @Test
    void listVolumesPagesThroughEveryVolumeOnceAndAbortsOnABadToken() {
        List<String> created = IntStream.range(0, 40)
                .mapToObj(i -> create("pvc-list-" + i, MIB).getVolumeId())
                .sorted()
                .toList();

        List<String> listed = new ArrayList<>();
        List<String> deleted = new ArrayList<>();
        String token = "";
        do {
            ListVolumesResponse page = controller
                    .stub()
                    .listVolumes(ListVolumesRequest.newBuilder()
                            .setMaxEntries(3)
                            .setStartingToken(token)
                            .build());
            assertThat(page.getEntriesCount()).isLessThanOrEqualTo(3);
            page.getEntriesList().forEach(e -> listed.add(e.getVolume().getVolumeId()));
            token = page.getNextToken();
            if (!token.isEmpty()) {
                // the token stays good when the volume its page ended at is deleted before the next call
                String last = listed.getLast();
                controller
                        .stub()
                        .deleteVolume(DeleteVolumeRequest.newBuilder()
                                .setVolumeId(last)
                                .build());
                deleted.add(last);
            }
        } while (!token.isEmpty());
        assertThat(listed).doesNotHaveDuplicates().containsExactlyInAnyOrderElementsOf(created);
        assertThat(controller
                        .stub()
                        .listVolumes(ListVolumesRequest.getDefaultInstance())
                        .getEntriesList())
                .extracting(e -> e.getVolume().getVolumeId())
                .containsExactlyInAnyOrderElementsOf(
                        created.stream().filter(id -> !deleted.contains(id)).toList());

        failure(
                () -> controller
                        .stub()
                        .listVolumes(ListVolumesRequest.newBuilder()
                                .setStartingToken("bogus")
                                .build()),
                Status.Code.ABORTED);
    }

    @Test
    void aTokenPastTheLastDirectoryPositionIsAnEmptyLastPage() {
        create("pvc-past", MIB);
        String pastTheEnd = java.util.Base64.getUrlEncoder()
                .withoutPadding()
                .encodeToString(("at:" + Long.MAX_VALUE).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        ListVolumesResponse page = controller
                .stub()
                .listVolumes(ListVolumesRequest.newBuilder()
                        .setMaxEntries(10)
                        .setStartingToken(pastTheEnd)
                        .build());
        assertThat(page.getEntriesList()).isEmpty();
        assertThat(page.getNextToken()).isEmpty();
    }

    @Test
    void volumeHealthReportsAMissingOrWronglySizedImageAndOnlyTheAbnormalAreListed() throws IOException {
        String id = create("pvc-cond", 4 * MIB).getVolumeId();
        create("pvc-fine", 4 * MIB);
        Path image = poolDir.resolve("volumes").resolve(id + ".img");
        ControllerGetVolumeHealthRequest request =
                ControllerGetVolumeHealthRequest.newBuilder().setVolumeId(id).build();

        VolumeHealth healthy =
                controller.stub().controllerGetVolumeHealth(request).getVolumeHealth();
        assertThat(healthy.getVolumeId()).isEqualTo(id);
        assertThat(healthy.getHealthStatusesList()).isEmpty();
        assertThat(listHealth()).isEmpty();

        try (RandomAccessFile file = new RandomAccessFile(image.toFile(), "rw")) {
            file.setLength(3 * MIB);
        }
        var shrunk = controller
                .stub()
                .controllerGetVolumeHealth(request)
                .getVolumeHealth()
                .getHealthStatuses(0);
        assertThat(shrunk.getStatus()).isEqualTo(VolumeHealthErrorType.DATA_LOSS);
        assertThat(shrunk.getReason()).isEqualTo("ImageTruncated");
        assertThat(shrunk.getMessage()).contains(Long.toString(3 * MIB)).contains(Long.toString(4 * MIB));

        Files.delete(image);
        var missing = controller
                .stub()
                .controllerGetVolumeHealth(request)
                .getVolumeHealth()
                .getHealthStatuses(0);
        assertThat(missing.getReason()).isEqualTo("ImageMissing");
        assertThat(missing.getMessage()).contains("missing");
        assertThat(listHealth()).extracting(VolumeHealth::getVolumeId).containsExactly(id);

        assertThat(failure(
                        () -> controller
                                .stub()
                                .controllerGetVolumeHealth(ControllerGetVolumeHealthRequest.getDefaultInstance()),
                        Status.Code.INVALID_ARGUMENT))
                .hasMessageContaining("volume_id");
    }

    @Test
    void volumeHealthReportsUnreadableMetadataAndAVanishedPool() throws IOException {
        String id = create("pvc-damaged", 4 * MIB).getVolumeId();
        Files.writeString(poolDir.resolve("volumes").resolve(id + ".json"), "{ not json");
        var damaged = controller
                .stub()
                .controllerGetVolumeHealth(ControllerGetVolumeHealthRequest.newBuilder()
                        .setVolumeId(id)
                        .build())
                .getVolumeHealth()
                .getHealthStatuses(0);
        assertThat(damaged.getStatus()).isEqualTo(VolumeHealthErrorType.INACCESSIBLE);
        assertThat(damaged.getReason()).isEqualTo("MetadataUnreadable");
        assertThat(listHealth()).extracting(VolumeHealth::getVolumeId).containsExactly(id);

        // the pool's filesystem not mounted: an empty directory where the pool was
        try (Stream<Path> files = Files.walk(poolDir)) {
            files.sorted(java.util.Comparator.reverseOrder())
                    .filter(p -> !p.equals(poolDir))
                    .forEach(p -> p.toFile().delete());
        }
        var gone = controller
                .stub()
                .controllerGetVolumeHealth(ControllerGetVolumeHealthRequest.newBuilder()
                        .setVolumeId(id)
                        .build())
                .getVolumeHealth()
                .getHealthStatuses(0);
        assertThat(gone.getReason()).isEqualTo("PoolUnavailable");
        assertThat(gone.getMessage()).contains("mounted");
        assertThat(failure(() -> listHealth(), Status.Code.FAILED_PRECONDITION)).hasMessageContaining("gone");
    }

    private List<VolumeHealth> listHealth() {
        List<VolumeHealth> all = new ArrayList<>();
        String token = "";
        do {
            var page = controller
                    .stub()
                    .controllerListVolumeHealth(ControllerListVolumeHealthRequest.newBuilder()
                            .setMaxEntries(1)
                            .setStartingToken(token)
                            .build());
            all.addAll(page.getEntriesList());
            token = page.getNextToken();
        } while (!token.isEmpty());
        return all;
    }

    @Test
    void modifyVolumeReservesEveryBlockOfASparseVolumeDurablyAndIdempotently() {
        String id = create("pvc-vac", 8 * MIB).getVolumeId();
        Path image = poolDir.resolve("volumes").resolve(id + ".img");
        assertThat(allocatedBytes(image)).isLessThan(8 * MIB);

        ControllerModifyVolumeRequest preallocate = ControllerModifyVolumeRequest.newBuilder()
                .setVolumeId(id)
                .putMutableParams("allocation", "preallocated")
                .build();
        controller.stub().controllerModifyVolume(preallocate);
        controller.stub().controllerModifyVolume(preallocate);
        assertThat(allocatedBytes(image)).isGreaterThanOrEqualTo(8 * MIB);
        controller.restart();
        assertThat(controller.pool().volumes().get(id).allocation()).isEqualTo(Allocation.PREALLOCATED);
        // a retried CreateVolume still finds the volume it made
        assertThat(create("pvc-vac", 8 * MIB).getVolumeId()).isEqualTo(id);

        // back to sparse: the record changes, the reserved blocks stay
        controller
                .stub()
                .controllerModifyVolume(ControllerModifyVolumeRequest.newBuilder()
                        .setVolumeId(id)
                        .putMutableParams("allocation", "sparse")
                        .build());
        assertThat(controller.pool().volumes().get(id).allocation()).isEqualTo(Allocation.SPARSE);
        assertThat(allocatedBytes(image)).isGreaterThanOrEqualTo(8 * MIB);
        // nothing to change is no change
        controller
                .stub()
                .controllerModifyVolume(ControllerModifyVolumeRequest.newBuilder()
                        .setVolumeId(id)
                        .build());
    }

    @Test
    void modifyVolumeRefusesWhatCannotChange() {
        String id = create("pvc-vac-bad", MIB).getVolumeId();
        assertThat(failure(
                        () -> controller
                                .stub()
                                .controllerModifyVolume(ControllerModifyVolumeRequest.newBuilder()
                                        .setVolumeId(id)
                                        .putMutableParams("fsType", "xfs")
                                        .build()),
                        Status.Code.INVALID_ARGUMENT))
                .hasMessageContaining("cannot change")
                .hasMessageContaining("allocation");
        assertThat(failure(
                        () -> controller
                                .stub()
                                .controllerModifyVolume(ControllerModifyVolumeRequest.newBuilder()
                                        .setVolumeId(id)
                                        .putMutableParams("iops", "100")
                                        .build()),
                        Status.Code.INVALID_ARGUMENT))
                .hasMessageContaining("\"iops\" is not supported");
        assertThat(failure(
                        () -> controller
                                .stub()
                                .controllerModifyVolume(ControllerModifyVolumeRequest.newBuilder()
                                        .setVolumeId(id)
                                        .putMutableParams("allocation", "thick")
                                        .build()),
                        Status.Code.INVALID_ARGUMENT))
                .hasMessageContaining("preallocated");
        assertThat(controller.pool().volumes().get(id).allocation()).isEqualTo(Allocation.SPARSE);
    }

    @Test
    void createVolumeTakesTheAllocationOfAVolumeAttributesClass() {
        String id = controller
                .stub()
                .createVolume(createRequest("pvc-vac-new", 4 * MIB)
                        .putParameters("allocation", "sparse")
                        .putMutableParams("allocation", "preallocated")
                        .build())
                .getVolume()
                .getVolumeId();
        assertThat(controller.pool().volumes().get(id).allocation()).isEqualTo(Allocation.PREALLOCATED);
        assertThat(allocatedBytes(poolDir.resolve("volumes").resolve(id + ".img")))
                .isGreaterThanOrEqualTo(4 * MIB);
    }

    private static long allocatedBytes(Path file) {
        // st_blocks counts 512-byte units
        return Long.parseLong(new ProcessCommandRunner()
                        .runChecked("stat", "-c", "%b", file.toString())
                        .stdout()
                        .strip())
                * 512;
    }

    @Test
    void getCapacityReportsThePoolFilesystem() throws IOException {
        GetCapacityResponse capacity = controller
                .stub()
                .getCapacity(GetCapacityRequest.newBuilder()
                        .addVolumeCapabilities(singleWriter())
                        .build());
        long total = Files.getFileStore(poolDir).getTotalSpace();
        assertThat(capacity.getAvailableCapacity()).isPositive().isLessThanOrEqualTo(total);
        assertThat(capacity.hasMaximumVolumeSize()).isTrue();
        assertThat(capacity.getMaximumVolumeSize().getValue()).isPositive().isLessThanOrEqualTo(total);
        failure(
                () -> controller
                        .stub()
                        .getCapacity(GetCapacityRequest.newBuilder()
                                .addVolumeCapabilities(mount(Mode.MULTI_NODE_MULTI_WRITER))
                                .build()),
                Status.Code.INVALID_ARGUMENT);
    }

    @Test
    void expandGrowsTheImageDurablyAndAsksTheNodeToFollow() {
        String id = create("pvc-grow", 8 * MIB).getVolumeId();
        ControllerExpandVolumeResponse grown = controller.stub().controllerExpandVolume(expand(id, 20 * MIB));
        assertThat(grown.getCapacityBytes()).isEqualTo(20 * MIB);
        assertThat(grown.getNodeExpansionRequired()).isTrue();
        assertThat(poolDir.resolve("volumes").resolve(id + ".img")).hasSize(20 * MIB);

        controller.restart();
        assertThat(controller
                        .stub()
                        .controllerGetVolume(ControllerGetVolumeRequest.newBuilder()
                                .setVolumeId(id)
                                .build())
                        .getVolume()
                        .getCapacityBytes())
                .isEqualTo(20 * MIB);
        assertThat(controller.stub().controllerExpandVolume(expand(id, 8 * MIB)).getCapacityBytes())
                .as("never shrinks")
                .isEqualTo(20 * MIB);
        failure(() -> controller.stub().controllerExpandVolume(expand(id, 1L << 60)), Status.Code.OUT_OF_RANGE);
    }

    private static ControllerExpandVolumeRequest expand(String id, long bytes) {
        return ControllerExpandVolumeRequest.newBuilder()
                .setVolumeId(id)
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(bytes))
                .build();
    }

    @Test
    void advertisesExactlyTheCapabilitiesOfTheIssue() {
        List<Type> advertised = controller
                .stub()
                .controllerGetCapabilities(ControllerGetCapabilitiesRequest.getDefaultInstance())
                .getCapabilitiesList()
                .stream()
                .map(ControllerServiceCapability::getRpc)
                .map(ControllerServiceCapability.RPC::getType)
                .toList();
        assertThat(advertised)
                .doesNotHaveDuplicates()
                .containsExactlyInAnyOrder(
                        Type.CREATE_DELETE_VOLUME,
                        Type.PUBLISH_UNPUBLISH_VOLUME,
                        Type.LIST_VOLUMES,
                        Type.LIST_VOLUMES_PUBLISHED_NODES,
                        Type.GET_CAPACITY,
                        Type.CREATE_DELETE_SNAPSHOT,
                        Type.LIST_SNAPSHOTS,
                        Type.GET_SNAPSHOT,
                        Type.CLONE_VOLUME,
                        Type.PUBLISH_READONLY,
                        Type.EXPAND_VOLUME,
                        Type.GET_VOLUME,
                        Type.GET_VOLUME_HEALTH,
                        Type.LIST_VOLUME_HEALTH,
                        Type.MODIFY_VOLUME,
                        Type.SINGLE_NODE_MULTI_WRITER);
    }

    // ---- snapshots, restores, clones ----

    @Test
    void snapshotsAreIdempotentByNameAndIndependentOfTheirSource() {
        String source = create("pvc-src", 4 * MIB).getVolumeId();
        String other = create("pvc-other", 4 * MIB).getVolumeId();
        Snapshot first =
                controller.stub().createSnapshot(snapshot("snap-1", source)).getSnapshot();
        assertThat(first.getSnapshotId()).matches("snap-[0-9a-f]{32}");
        assertThat(first.getReadyToUse()).isTrue();
        assertThat(first.getSizeBytes()).isEqualTo(4 * MIB);
        assertThat(first.getSourceVolumeId()).isEqualTo(source);
        assertThat(first.getCreationTime().getSeconds()).isPositive();

        assertThat(controller.stub().createSnapshot(snapshot("snap-1", source)).getSnapshot())
                .isEqualTo(first);
        failure(() -> controller.stub().createSnapshot(snapshot("snap-1", other)), Status.Code.ALREADY_EXISTS);
        controller.restart();
        assertThat(controller.stub().createSnapshot(snapshot("snap-1", source)).getSnapshot())
                .isEqualTo(first);
        failure(() -> controller.stub().createSnapshot(snapshot("snap-1", other)), Status.Code.ALREADY_EXISTS);

        controller.stub().deleteVolume(delete(source));
        assertThat(controller.stub().createSnapshot(snapshot("snap-1", source)).getSnapshot())
                .as("a retry once the source is deleted")
                .isEqualTo(first);
        failure(() -> controller.stub().createSnapshot(snapshot("snap-3", source)), Status.Code.NOT_FOUND);
        assertThat(controller
                        .stub()
                        .getSnapshot(GetSnapshotRequest.newBuilder()
                                .setSnapshotId(first.getSnapshotId())
                                .build())
                        .getSnapshot())
                .isEqualTo(first);
        Volume restored = controller
                .stub()
                .createVolume(createRequest("pvc-restored", 4 * MIB)
                        .setVolumeContentSource(fromSnapshot(first.getSnapshotId()))
                        .build())
                .getVolume();
        assertThat(restored.getContentSource().getSnapshot().getSnapshotId()).isEqualTo(first.getSnapshotId());
    }

    @Test
    void listSnapshotsFiltersAndPages() {
        String a = create("pvc-a", MIB).getVolumeId();
        String b = create("pvc-b", MIB).getVolumeId();
        List<String> ofA = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            ofA.add(controller
                    .stub()
                    .createSnapshot(snapshot("snap-a-" + i, a))
                    .getSnapshot()
                    .getSnapshotId());
        }
        String ofB = controller
                .stub()
                .createSnapshot(snapshot("snap-b", b))
                .getSnapshot()
                .getSnapshotId();

        assertThat(listSnapshots(ListSnapshotsRequest.newBuilder(), 2)).hasSize(6);
        assertThat(listSnapshots(ListSnapshotsRequest.newBuilder().setSourceVolumeId(a), 2))
                .containsExactlyInAnyOrderElementsOf(ofA);
        assertThat(listSnapshots(ListSnapshotsRequest.newBuilder().setSnapshotId(ofB), 0))
                .containsExactly(ofB);
        assertThat(listSnapshots(ListSnapshotsRequest.newBuilder().setSnapshotId(Ids.snapshotIdFor("nope")), 0))
                .isEmpty();
        assertThat(listSnapshots(ListSnapshotsRequest.newBuilder().setSourceVolumeId(Ids.volumeIdFor("x")), 0))
                .isEmpty();
        failure(
                () -> controller
                        .stub()
                        .listSnapshots(ListSnapshotsRequest.newBuilder()
                                .setStartingToken("nope")
                                .build()),
                Status.Code.ABORTED);

        controller
                .stub()
                .deleteSnapshot(
                        DeleteSnapshotRequest.newBuilder().setSnapshotId(ofB).build());
        controller
                .stub()
                .deleteSnapshot(
                        DeleteSnapshotRequest.newBuilder().setSnapshotId(ofB).build());
        failure(
                () -> controller
                        .stub()
                        .getSnapshot(GetSnapshotRequest.newBuilder()
                                .setSnapshotId(ofB)
                                .build()),
                Status.Code.NOT_FOUND);
        assertThat(poolDir.resolve("snapshots").resolve(ofB + ".img")).doesNotExist();
    }

    private List<String> listSnapshots(ListSnapshotsRequest.Builder request, int pageSize) {
        List<String> ids = new ArrayList<>();
        String token = "";
        do {
            ListSnapshotsResponse page = controller
                    .stub()
                    .listSnapshots(request.setMaxEntries(pageSize)
                            .setStartingToken(token)
                            .build());
            page.getEntriesList().forEach(e -> ids.add(e.getSnapshot().getSnapshotId()));
            token = page.getNextToken();
        } while (!token.isEmpty());
        return ids;
    }

    @Test
    void restoreAndCloneCheckTheirSource() {
        String source = create("pvc-src", 8 * MIB).getVolumeId();
        String snap = controller
                .stub()
                .createSnapshot(snapshot("snap-src", source))
                .getSnapshot()
                .getSnapshotId();

        failure(
                () -> controller
                        .stub()
                        .createVolume(createRequest("pvc-small", 4 * MIB)
                                .setVolumeContentSource(fromSnapshot(snap))
                                .build()),
                Status.Code.OUT_OF_RANGE);
        failure(
                () -> controller
                        .stub()
                        .createVolume(createRequest("pvc-small", 4 * MIB)
                                .setVolumeContentSource(fromVolume(source))
                                .build()),
                Status.Code.OUT_OF_RANGE);

        Volume bigger = controller
                .stub()
                .createVolume(createRequest("pvc-bigger", 16 * MIB)
                        .setVolumeContentSource(fromSnapshot(snap))
                        .build())
                .getVolume();
        assertThat(bigger.getCapacityBytes()).isEqualTo(16 * MIB);
        assertThat(poolDir.resolve("volumes").resolve(bigger.getVolumeId() + ".img"))
                .hasSize(16 * MIB);
        Volume clone = controller
                .stub()
                .createVolume(createRequest("pvc-clone", 8 * MIB)
                        .setVolumeContentSource(fromVolume(source))
                        .build())
                .getVolume();
        assertThat(clone.getContentSource().getVolume().getVolumeId()).isEqualTo(source);
        // the same name with another source is another volume request
        failure(
                () -> controller
                        .stub()
                        .createVolume(createRequest("pvc-clone", 8 * MIB)
                                .setVolumeContentSource(fromSnapshot(snap))
                                .build()),
                Status.Code.ALREADY_EXISTS);
        failure(
                () -> controller
                        .stub()
                        .createVolume(createRequest("pvc-clone", 8 * MIB).build()),
                Status.Code.ALREADY_EXISTS);
    }

    // ---- helpers ----

    private interface Task {
        void run(int index) throws Exception;
    }

    /** Runs {@code count} tasks at once, released together, and waits for all of them. */
    private static void runConcurrently(int count, Task task) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(count);
        try {
            CountDownLatch ready = new CountDownLatch(count);
            CountDownLatch go = new CountDownLatch(1);
            List<Future<?>> futures = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                int index = i;
                futures.add(pool.submit(() -> {
                    ready.countDown();
                    go.await();
                    task.run(index);
                    return null;
                }));
            }
            assertThat(ready.await(30, TimeUnit.SECONDS)).isTrue();
            go.countDown();
            for (Future<?> future : futures) {
                future.get(60, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /** Runs host commands for real, but holds the first image copy until the test releases it. */
    private static final class GatedCommandRunner implements CommandRunner {
        private final CommandRunner real = new ProcessCommandRunner();
        final CountDownLatch entered = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        private volatile boolean gate;

        void closeGate() {
            gate = true;
        }

        @Override
        public Result run(Duration timeout, List<String> command) {
            if (gate && command.getFirst().equals("cp")) {
                entered.countDown();
                try {
                    release.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return real.run(timeout, command);
        }
    }
}
