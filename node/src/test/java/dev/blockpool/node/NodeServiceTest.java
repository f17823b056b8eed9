package dev.blockpool.node;

import static dev.blockpool.csi.StatusAssertions.assertCode;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Message;
import csi.v1.Csi;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import csi.v1.NodeGrpc;
import dev.blockpool.common.OperationLocks;
import dev.blockpool.common.StorageException;
import dev.blockpool.csi.CsiCalls;
import dev.blockpool.csi.CsiKeys;
import dev.blockpool.csi.CsiRequests;
import dev.blockpool.csi.InProcessCsi;
import dev.blockpool.host.FakeHost;
import dev.blockpool.host.KubeletPaths;
import dev.blockpool.pool.AccessType;
import io.grpc.Status;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Request validation, status codes and capability reporting, on a fake host and catalog. */
class NodeServiceTest {

    @TempDir
    Path dir;

    private final OperationLocks locks = new OperationLocks();
    /** What a group snapshot holds frozen, by volume, as the driver would tell it. */
    private final Map<String, String> frozen = new ConcurrentHashMap<>();

    private FakeVolumeCatalog catalog;
    private FakeHost fake;
    private InProcessCsi served;
    private NodeGrpc.NodeBlockingStub node;
    private NodeVolume fsVolume;

    @BeforeEach
    void setUp() throws IOException {
        fake = new FakeHost(dir.resolve("dev"));
        catalog = new FakeVolumeCatalog(dir);
        fsVolume = new NodeVolume(
                "vol-1",
                Files.createFile(dir.resolve("vol-1.img")),
                Optional.of("ext4"),
                Set.of(AccessType.MOUNT),
                NodeVolume.Lifetime.PERSISTENT);
        catalog.volumes.put(fsVolume.id(), fsVolume);
        served = InProcessCsi.serve(new NodeService(
                NodeIdentity.of("node-a", 16),
                catalog,
                fake.nodeHost(),
                new KubeletPaths(dir.resolve("pool"), dir.resolve("csi.sock")),
                locks,
                Runnable::run,
                volumeId -> Optional.ofNullable(frozen.get(volumeId))));
        node = NodeGrpc.newBlockingStub(served.channel());
    }

    @AfterEach
    void tearDown() {
        served.close();
    }

    private static final Csi.VolumeCapability WRITER = CsiRequests.mount(Mode.SINGLE_NODE_WRITER);
    private static final Csi.VolumeCapability BLOCK = CsiRequests.block(Mode.SINGLE_NODE_WRITER);

    private String staging() {
        return staging(dir);
    }

    private String target() {
        return target(dir);
    }

    private static String staging(Path dir) {
        return dir.resolve("staging").toString();
    }

    private static String target(Path dir) {
        return dir.resolve("target").toString();
    }

    /** A case of a rule: a request whose paths lie under the test's directory, {@code dir}. */
    private static Arguments request(String what, Function<Path, Message> request) {
        return Arguments.of(what, request);
    }

    private static Csi.NodeStageVolumeRequest.Builder stage(Path dir) {
        return Csi.NodeStageVolumeRequest.newBuilder()
                .setVolumeId("vol-1")
                .setStagingTargetPath(staging(dir))
                .setVolumeCapability(WRITER);
    }

    private static Csi.NodePublishVolumeRequest.Builder publish(Path dir) {
        return Csi.NodePublishVolumeRequest.newBuilder()
                .setVolumeId("vol-1")
                .setTargetPath(target(dir))
                .setStagingTargetPath(staging(dir))
                .setVolumeCapability(WRITER);
    }

    static Stream<Arguments> requestsMissingOrMisstatingAField() {
        return Stream.of(
                request(
                        "stage without a volume ID",
                        d -> stage(d).clearVolumeId().build()),
                request(
                        "stage without a staging path",
                        d -> stage(d).clearStagingTargetPath().build()),
                request(
                        "stage without a capability",
                        d -> stage(d).clearVolumeCapability().build()),
                request(
                        "stage at a relative path",
                        d -> stage(d).setStagingTargetPath("relative").build()),
                request(
                        "stage as a filesystem the driver does not make",
                        d -> stage(d).setVolumeCapability(WRITER.toBuilder()
                                        .setMount(WRITER.getMount().toBuilder().setFsType("btrfs")))
                                .build()),
                request(
                        "stage without an access mode",
                        d -> stage(d).setVolumeCapability(WRITER.toBuilder().clearAccessMode())
                                .build()),
                request(
                        "publish without a volume ID",
                        d -> publish(d).clearVolumeId().build()),
                request(
                        "publish without a target",
                        d -> publish(d).clearTargetPath().build()),
                request(
                        "publish without a capability",
                        d -> publish(d).clearVolumeCapability().build()),
                request(
                        "publish without a staging path",
                        d -> publish(d).clearStagingTargetPath().build()),
                request(
                        "unpublish without a volume ID",
                        d -> Csi.NodeUnpublishVolumeRequest.newBuilder()
                                .setTargetPath(target(d))
                                .build()),
                request(
                        "unpublish without a target",
                        d -> Csi.NodeUnpublishVolumeRequest.newBuilder()
                                .setVolumeId("vol-1")
                                .build()),
                request(
                        "unstage without a volume ID",
                        d -> Csi.NodeUnstageVolumeRequest.newBuilder()
                                .setStagingTargetPath(staging(d))
                                .build()),
                request(
                        "unstage without a staging path",
                        d -> Csi.NodeUnstageVolumeRequest.newBuilder()
                                .setVolumeId("vol-1")
                                .build()),
                request(
                        "stats without a volume ID",
                        d -> Csi.NodeGetVolumeStatsRequest.newBuilder()
                                .setVolumePath("some/path")
                                .build()),
                request(
                        "stats without a path",
                        d -> Csi.NodeGetVolumeStatsRequest.newBuilder()
                                .setVolumeId("vol-1")
                                .build()),
                request(
                        "expand without a volume ID",
                        d -> Csi.NodeExpandVolumeRequest.newBuilder()
                                .setVolumePath(target(d))
                                .build()),
                request(
                        "expand without a path",
                        d -> Csi.NodeExpandVolumeRequest.newBuilder()
                                .setVolumeId("vol-1")
                                .build()),
                request("health without a volume ID", d -> Csi.NodeGetVolumeHealthRequest.getDefaultInstance()),
                request(
                        "health at a relative path",
                        d -> Csi.NodeGetVolumeHealthRequest.newBuilder()
                                .setVolumeId("vol-1")
                                .setVolumePublishPath("relative/target")
                                .build()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("requestsMissingOrMisstatingAField")
    void aRequestMissingOrMisstatingAFieldIsAnInvalidArgumentAndTouchesNothing(
            String what, Function<Path, Message> request) {
        assertCode(() -> CsiCalls.call(served.channel(), request.apply(dir)), Status.Code.INVALID_ARGUMENT);
        assertThat(fake.log).isEmpty();
    }

    static Stream<Arguments> requestsForAVolumeThatIsNotThere() {
        return Stream.of(
                request(
                        "stage an unknown volume",
                        d -> stage(d).setVolumeId("vol-unknown").build()),
                request(
                        "stats of an unknown volume",
                        d -> Csi.NodeGetVolumeStatsRequest.newBuilder()
                                .setVolumeId("fake-vol-id")
                                .setVolumePath("some/path")
                                .build()),
                request(
                        "stats of a volume not at the path",
                        d -> Csi.NodeGetVolumeStatsRequest.newBuilder()
                                .setVolumeId("vol-1")
                                .setVolumePath("some/path")
                                .build()),
                request(
                        "expand an unknown volume",
                        d -> Csi.NodeExpandVolumeRequest.newBuilder()
                                .setVolumeId("fake-vol-id")
                                .setVolumePath("some/path")
                                .build()),
                request(
                        "health of an unknown volume",
                        d -> Csi.NodeGetVolumeHealthRequest.newBuilder()
                                .setVolumeId("vol-9")
                                .build()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("requestsForAVolumeThatIsNotThere")
    void aVolumeThatIsNotThereIsNotFound(String what, Function<Path, Message> request) {
        assertCode(() -> CsiCalls.call(served.channel(), request.apply(dir)), Status.Code.NOT_FOUND);
    }

    @Test
    void theTeardownOfAVolumeThatIsNotThereIsOk() {
        node.nodeUnpublishVolume(Csi.NodeUnpublishVolumeRequest.newBuilder()
                .setVolumeId("fake-vol-id")
                .setTargetPath(target())
                .build());
        node.nodeUnstageVolume(Csi.NodeUnstageVolumeRequest.newBuilder()
                .setVolumeId("vol-gone")
                .setStagingTargetPath(staging())
                .build());
    }

    static Stream<Arguments> capabilitiesAFilesystemVolumeCannotServe() {
        return Stream.of(
                Arguments.of("raw block", BLOCK),
                Arguments.of("many nodes writing", CsiRequests.mount(Mode.MULTI_NODE_MULTI_WRITER)),
                Arguments.of(
                        "another filesystem",
                        WRITER.toBuilder()
                                .setMount(WRITER.getMount().toBuilder().setFsType("xfs"))
                                .build()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("capabilitiesAFilesystemVolumeCannotServe")
    void aCapabilityTheVolumeCannotServeIsAFailedPrecondition(String what, Csi.VolumeCapability capability) {
        assertCode(
                () -> node.nodeStageVolume(
                        stage(dir).setVolumeCapability(capability).build()),
                Status.Code.FAILED_PRECONDITION);
    }

    @Test
    void stageThenPublishReadOnlyFromPublishContext() {
        node.nodeStageVolume(Csi.NodeStageVolumeRequest.newBuilder()
                .setVolumeId("vol-1")
                .setStagingTargetPath(staging())
                .setVolumeCapability(WRITER)
                .build());
        node.nodePublishVolume(Csi.NodePublishVolumeRequest.newBuilder()
                .setVolumeId("vol-1")
                .setStagingTargetPath(staging())
                .setTargetPath(target())
                .setVolumeCapability(WRITER)
                .putPublishContext("readonly", "true")
                .build());
        assertThat(fake.log).contains("format loop0 ext4", "bind target ro");
    }

    @Test
    void aVolumeIdIsNeverPublishedAsAnEphemeralInlineVolume() {
        assertCode(
                () -> node.nodePublishVolume(Csi.NodePublishVolumeRequest.newBuilder()
                        .setVolumeId("vol-1")
                        .setTargetPath(target())
                        .setVolumeCapability(WRITER)
                        .putVolumeContext(CsiKeys.EPHEMERAL, "true")
                        .build()),
                Status.Code.INVALID_ARGUMENT);
        assertThat(fake.log).isEmpty();
        assertThat(catalog.volumes).containsKey("vol-1");
    }

    private Csi.NodePublishVolumeRequest inline(String handle, boolean readOnly) {
        return Csi.NodePublishVolumeRequest.newBuilder()
                .setVolumeId(handle)
                .setTargetPath(target())
                .setVolumeCapability(WRITER)
                .setReadonly(readOnly)
                .putVolumeContext(CsiKeys.EPHEMERAL, "true")
                .build();
    }

    @Test
    void anInlineVolumeIsLockedUnderThePoolsIdAsTheControllerLocksIt() {
        // A controller call on the volume the pool made for the handle (a DeleteVolume, the reconcile).
        locks.withLock(
                () -> assertCode(() -> node.nodePublishVolume(inline("csi-abc", false)), Status.Code.ABORTED),
                "vol-eph-csi-abc");
        assertThat(fake.log).isEmpty();

        node.nodePublishVolume(inline("csi-abc", false));
        locks.withLock(
                () -> assertCode(
                        () -> node.nodeUnpublishVolume(Csi.NodeUnpublishVolumeRequest.newBuilder()
                                .setVolumeId("csi-abc")
                                .setTargetPath(target())
                                .build()),
                        Status.Code.ABORTED),
                "vol-eph-csi-abc");
        assertThat(catalog.volumes).containsKey("csi-abc");
    }

    @Test
    void aFailedEphemeralPublishLeavesNoVolumeAndNoLoopDevice() {
        fake.mountFailure = StorageException.internal("mount: wrong fs type");
        assertCode(() -> node.nodePublishVolume(inline("csi-abc", false)), Status.Code.INTERNAL);
        assertThat(fake.log)
                .containsExactly(
                        "attach vol-eph-csi-abc.img", "format loop0 ext4", "mount failed loop0", "detach loop0");
        assertThat(fake.loops).isEmpty();
        assertThat(catalog.volumes).doesNotContainKey("csi-abc");
    }

    @Test
    void aFailedRetryOfAnEphemeralPublishKeepsTheMountedVolume() {
        node.nodePublishVolume(inline("csi-abc", false));
        assertCode(() -> node.nodePublishVolume(inline("csi-abc", true)), Status.Code.ALREADY_EXISTS);
        assertThat(catalog.volumes).containsKey("csi-abc");
        assertThat(fake.mounts)
                .singleElement()
                .satisfies(m -> assertThat(m.readOnly()).isFalse());
        assertThat(fake.loops).hasSize(1);
    }

    @Test
    void aReadOnlyEphemeralVolumeIsFormattedReadWriteThenMountedReadOnly() {
        node.nodePublishVolume(inline("csi-ro", true));
        node.nodePublishVolume(inline("csi-ro", true));
        assertThat(fake.log).containsExactly("attach vol-eph-csi-ro.img", "format loop0 ext4", "mount loop0 ext4 [ro]");
        assertThat(fake.mounts)
                .singleElement()
                .satisfies(m -> assertThat(m.readOnly()).isTrue());

        node.nodeUnpublishVolume(Csi.NodeUnpublishVolumeRequest.newBuilder()
                .setVolumeId("csi-ro")
                .setTargetPath(target())
                .build());
        assertThat(fake.mounts).isEmpty();
        assertThat(fake.loops).isEmpty();
        assertThat(catalog.volumes).doesNotContainKey("csi-ro");
    }

    private static Csi.VolumeCapability withFlags(String... flags) {
        return WRITER.toBuilder()
                .setMount(WRITER.getMount().toBuilder().addAllMountFlags(List.of(flags)))
                .build();
    }

    @Test
    void mountFlagsAreCheckedAgainstTheVolumesFilesystemNotTheRequestsEmptyFsType() {
        assertCode(
                () -> node.nodeStageVolume(Csi.NodeStageVolumeRequest.newBuilder()
                        .setVolumeId("vol-1")
                        .setStagingTargetPath(staging())
                        .setVolumeCapability(withFlags("nouuid"))
                        .build()),
                Status.Code.INVALID_ARGUMENT);
        assertThat(fake.log).as("refused before anything is attached").isEmpty();

        node.nodeStageVolume(Csi.NodeStageVolumeRequest.newBuilder()
                .setVolumeId("vol-1")
                .setStagingTargetPath(staging())
                .setVolumeCapability(withFlags("errors=remount-ro,noatime"))
                .build());
        assertCode(
                () -> node.nodePublishVolume(Csi.NodePublishVolumeRequest.newBuilder()
                        .setVolumeId("vol-1")
                        .setStagingTargetPath(staging())
                        .setTargetPath(target())
                        .setVolumeCapability(withFlags("inode64"))
                        .build()),
                Status.Code.INVALID_ARGUMENT);
        node.nodePublishVolume(Csi.NodePublishVolumeRequest.newBuilder()
                .setVolumeId("vol-1")
                .setStagingTargetPath(staging())
                .setTargetPath(target())
                .setVolumeCapability(withFlags("errors=remount-ro,noatime,data=journal,nodev"))
                .build());
        assertThat(fake.log)
                .containsExactly(
                        "attach vol-1.img",
                        "format loop0 ext4",
                        "mount loop0 ext4 [errors=remount-ro, noatime]",
                        "bind target [noatime, nodev]");
    }

    @Test
    void aSecondOperationOnTheSameVolumeIsAborted() {
        locks.withLock(
                () -> assertCode(
                        () -> node.nodeStageVolume(Csi.NodeStageVolumeRequest.newBuilder()
                                .setVolumeId("vol-1")
                                .setStagingTargetPath(staging())
                                .setVolumeCapability(WRITER)
                                .build()),
                        Status.Code.ABORTED),
                "vol-1");
    }

    @Test
    void publishesAtOtherTargetsRunBesideOneInProgressAndOnlyStagingWaits() {
        Csi.VolumeCapability many = CsiRequests.mount(Mode.SINGLE_NODE_MULTI_WRITER);
        node.nodeStageVolume(Csi.NodeStageVolumeRequest.newBuilder()
                .setVolumeId("vol-1")
                .setStagingTargetPath(staging())
                .setVolumeCapability(many)
                .build());
        Csi.NodePublishVolumeRequest.Builder publish = Csi.NodePublishVolumeRequest.newBuilder()
                .setVolumeId("vol-1")
                .setStagingTargetPath(staging())
                .setVolumeCapability(many);
        String first = dir.resolve("pods/a/volume").toString();
        String second = dir.resolve("pods/b/volume").toString();
        locks.withShared(
                () -> { // a publish at the first target is in progress
                    node.nodePublishVolume(publish.setTargetPath(second).build());
                    node.nodeUnpublishVolume(Csi.NodeUnpublishVolumeRequest.newBuilder()
                            .setVolumeId("vol-1")
                            .setTargetPath(second)
                            .build());
                    assertCode(
                            () -> node.nodePublishVolume(
                                    publish.setTargetPath(first).build()),
                            Status.Code.ABORTED);
                    assertCode(
                            () -> node.nodeUnstageVolume(Csi.NodeUnstageVolumeRequest.newBuilder()
                                    .setVolumeId("vol-1")
                                    .setStagingTargetPath(staging())
                                    .build()),
                            Status.Code.ABORTED);
                    return null;
                },
                "vol-1",
                dir.resolve("pods/a/volume").toString());
        node.nodePublishVolume(publish.setTargetPath(first).build());
        assertThat(fake.log.stream().filter(s -> s.startsWith("bind"))).containsExactly("bind volume", "bind volume");
    }

    @Test
    void aVolumeAGroupSnapshotLeftFrozenIsNotHealthy() {
        frozen.put("vol-1", "the file system of volume vol-1 has been frozen since 2026-11-28T07:00:00Z");

        assertThat(node.nodeGetVolumeHealth(Csi.NodeGetVolumeHealthRequest.newBuilder()
                                .setVolumeId("vol-1")
                                .build())
                        .getVolumeHealth()
                        .getHealthStatusesList())
                .singleElement()
                .satisfies(status -> {
                    assertThat(status.getReason()).isEqualTo(NodeService.FROZEN);
                    assertThat(status.getMessage()).contains("frozen since 2026-11-28T07:00:00Z");
                });
    }

    @Test
    void aKnownVolumeAndTheStorageAreHealthy() {
        assertThat(node.nodeGetVolumeHealth(Csi.NodeGetVolumeHealthRequest.newBuilder()
                                .setVolumeId("vol-1")
                                .setStagingTargetPath(staging())
                                .build())
                        .getVolumeHealth()
                        .getHealthStatusesList())
                .isEmpty();
        assertThat(node.nodeGetStorageHealth(Csi.NodeGetStorageHealthRequest.getDefaultInstance())
                        .getBackendHealthList())
                .isEmpty();
    }

    @Test
    void capabilitiesAndInfo() {
        Csi.NodeGetCapabilitiesResponse caps =
                node.nodeGetCapabilities(Csi.NodeGetCapabilitiesRequest.getDefaultInstance());
        assertThat(caps.getCapabilitiesList())
                .extracting(c -> c.getRpc().getType())
                .containsExactlyInAnyOrder(
                        Csi.NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME,
                        Csi.NodeServiceCapability.RPC.Type.GET_VOLUME_STATS,
                        Csi.NodeServiceCapability.RPC.Type.EXPAND_VOLUME,
                        Csi.NodeServiceCapability.RPC.Type.SINGLE_NODE_MULTI_WRITER,
                        Csi.NodeServiceCapability.RPC.Type.GET_VOLUME_HEALTH,
                        Csi.NodeServiceCapability.RPC.Type.GET_STORAGE_HEALTH);

        Csi.NodeGetInfoResponse info = node.nodeGetInfo(Csi.NodeGetInfoRequest.getDefaultInstance());
        assertThat(info.getNodeId()).isEqualTo("node-a");
        assertThat(info.getMaxVolumesPerNode()).isEqualTo(16);
        assertThat(info.getAccessibleTopology().getSegmentsMap())
                .containsExactly(Map.entry(CsiKeys.TOPOLOGY_NODE, "node-a"));
    }
}
