package dev.blockpool.controller;

import static dev.blockpool.controller.ControllerHarness.MIB;
import static dev.blockpool.controller.ControllerHarness.createRequest;
import static dev.blockpool.controller.ControllerHarness.fromSnapshot;
import static dev.blockpool.controller.ControllerHarness.fromVolume;
import static dev.blockpool.controller.ControllerHarness.singleWriter;
import static org.assertj.core.api.Assertions.assertThat;

import csi.v1.Csi.CapacityRange;
import csi.v1.Csi.ControllerExpandVolumeRequest;
import csi.v1.Csi.ControllerGetVolumeRequest;
import csi.v1.Csi.ControllerPublishVolumeRequest;
import csi.v1.Csi.ControllerUnpublishVolumeRequest;
import csi.v1.Csi.CreateSnapshotRequest;
import csi.v1.Csi.DeleteSnapshotRequest;
import csi.v1.Csi.DeleteVolumeRequest;
import csi.v1.Csi.GetSnapshotRequest;
import csi.v1.Csi.ListSnapshotsRequest;
import csi.v1.Csi.ValidateVolumeCapabilitiesRequest;
import dev.blockpool.common.Quoting;
import dev.blockpool.pool.NodeRecord;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hostile IDs sent to every RPC that takes one: each gets INVALID_ARGUMENT or NOT_FOUND (OK for
 * deletes and unpublishes of what cannot exist), and no file anywhere in the tree, inside or
 * outside the pool, is created, changed or removed.
 */
class PathSafetyTest {

    private static final Set<Status.Code> LOOKUP = Set.of(Status.Code.INVALID_ARGUMENT, Status.Code.NOT_FOUND);
    private static final Set<Status.Code> REMOVAL = Set.of(Status.Code.OK, Status.Code.INVALID_ARGUMENT);
    private static final String SECRET = "root:x:0:0:sentinel";

    @TempDir
    Path base;

    private Path poolDir;
    private ControllerHarness controller;
    private String volumeId;
    private String snapshotId;

    @BeforeEach
    void setUp() throws IOException {
        // base/sentinel*, base/etc/passwd, base/work/sentinel*, base/work/pool-sibling.img, base/work/pool/...
        Path work = Files.createDirectories(base.resolve("work"));
        poolDir = work.resolve("pool");
        for (Path dir : List.of(base, work)) {
            for (String name : List.of("sentinel", "sentinel.img", "sentinel.json")) {
                Files.writeString(dir.resolve(name), SECRET);
            }
        }
        Files.writeString(work.resolve("pool-sibling.img"), SECRET);
        Files.writeString(work.resolve("pool-sibling.json"), "{}");
        Files.createDirectories(base.resolve("etc"));
        Files.writeString(base.resolve("etc/passwd"), SECRET);

        controller = new ControllerHarness(poolDir);
        Files.writeString(poolDir.resolve("sentinel.img"), SECRET);
        Files.writeString(poolDir.resolve("sentinel.json"), "{}");
        controller.pool().nodes().register(new NodeRecord("node-1", 100, Map.of()));
        volumeId = controller
                .stub()
                .createVolume(createRequest("pvc-real", MIB).build())
                .getVolume()
                .getVolumeId();
        snapshotId = controller
                .stub()
                .createSnapshot(CreateSnapshotRequest.newBuilder()
                        .setName("snap-real")
                        .setSourceVolumeId(volumeId)
                        .build())
                .getSnapshot()
                .getSnapshotId();
    }

    @AfterEach
    void tearDown() {
        controller.close();
    }

    private List<String> hostileIds() {
        List<String> ids = new ArrayList<>(List.of(
                "..",
                ".",
                "/",
                "../sentinel",
                "../../sentinel",
                "../../../sentinel",
                "../../pool-sibling",
                "../../../etc/passwd",
                "../../etc/passwd",
                "../../../../../../../../../../etc/passwd",
                "/etc/passwd",
                base.resolve("sentinel").toString(),
                base.resolve("work/pool-sibling").toString(),
                "../volumes/" + volumeId,
                "../snapshots/" + snapshotId,
                "./" + volumeId,
                "./" + snapshotId,
                volumeId + "/../" + volumeId,
                snapshotId + "/../" + snapshotId,
                volumeId + "/",
                snapshotId + "/.",
                "../nodes/node-1",
                "node-1/../../volumes/" + volumeId,
                volumeId + "\0",
                snapshotId + "\0",
                "\0",
                "vol-\0../../sentinel",
                volumeId + "\0/../../sentinel",
                "a".repeat(200),
                "../".repeat(70) + "etc/passwd",
                volumeId + "/" + "x".repeat(200),
                "é".repeat(100)));
        return ids;
    }

    @Test
    void hostileIdsAreRefusedAndTouchNoFile() throws IOException {
        Map<String, String> before = tree();
        var stub = controller.stub();
        CapacityRange eightMib =
                CapacityRange.newBuilder().setRequiredBytes(8 * MIB).build();
        SoftAssertions softly = new SoftAssertions();

        for (String id : hostileIds()) {
            Map<String, Runnable> lookups = new LinkedHashMap<>();
            Map<String, Runnable> removals = new LinkedHashMap<>();
            removals.put(
                    "DeleteVolume",
                    () -> stub.deleteVolume(
                            DeleteVolumeRequest.newBuilder().setVolumeId(id).build()));
            removals.put(
                    "DeleteSnapshot",
                    () -> stub.deleteSnapshot(
                            DeleteSnapshotRequest.newBuilder().setSnapshotId(id).build()));
            removals.put(
                    "ControllerUnpublish(volume_id)",
                    () -> stub.controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder()
                            .setVolumeId(id)
                            .setNodeId("node-1")
                            .build()));
            removals.put(
                    "ControllerUnpublish(node_id)",
                    () -> stub.controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder()
                            .setVolumeId(volumeId)
                            .setNodeId(id)
                            .build()));
            lookups.put(
                    "ControllerPublish(volume_id)",
                    () -> stub.controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder()
                            .setVolumeId(id)
                            .setNodeId("node-1")
                            .setVolumeCapability(singleWriter())
                            .build()));
            lookups.put(
                    "ControllerPublish(node_id)",
                    () -> stub.controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder()
                            .setVolumeId(volumeId)
                            .setNodeId(id)
                            .setVolumeCapability(singleWriter())
                            .build()));
            lookups.put(
                    "ValidateVolumeCapabilities",
                    () -> stub.validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest.newBuilder()
                            .setVolumeId(id)
                            .addVolumeCapabilities(singleWriter())
                            .build()));
            lookups.put(
                    "ControllerGetVolume",
                    () -> stub.controllerGetVolume(ControllerGetVolumeRequest.newBuilder()
                            .setVolumeId(id)
                            .build()));
            lookups.put(
                    "ControllerExpandVolume",
                    () -> stub.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder()
                            .setVolumeId(id)
                            .setCapacityRange(eightMib)
                            .build()));
            lookups.put(
                    "CreateSnapshot(source_volume_id)",
                    () -> stub.createSnapshot(CreateSnapshotRequest.newBuilder()
                            .setName("snap-hostile")
                            .setSourceVolumeId(id)
                            .build()));
            lookups.put(
                    "GetSnapshot",
                    () -> stub.getSnapshot(
                            GetSnapshotRequest.newBuilder().setSnapshotId(id).build()));
            lookups.put(
                    "CreateVolume(snapshot source)",
                    () -> stub.createVolume(createRequest("pvc-hostile", 8 * MIB)
                            .setVolumeContentSource(fromSnapshot(id))
                            .build()));
            lookups.put(
                    "CreateVolume(volume source)",
                    () -> stub.createVolume(createRequest("pvc-hostile", 8 * MIB)
                            .setVolumeContentSource(fromVolume(id))
                            .build()));

            lookups.forEach((rpc, call) -> check(softly, rpc, id, call, LOOKUP));
            removals.forEach((rpc, call) -> check(softly, rpc, id, call, REMOVAL));
            softly.assertThat(stub.listSnapshots(ListSnapshotsRequest.newBuilder()
                                    .setSnapshotId(id)
                                    .build())
                            .getEntriesList())
                    .as("ListSnapshots(snapshot_id=%s)", Quoting.quote(id))
                    .isEmpty();
            softly.assertThat(stub.listSnapshots(ListSnapshotsRequest.newBuilder()
                                    .setSourceVolumeId(id)
                                    .build())
                            .getEntriesList())
                    .as("ListSnapshots(source_volume_id=%s)", Quoting.quote(id))
                    .isEmpty();
        }
        softly.assertAll();

        Map<String, String> after = tree();
        assertThat(outsidePool(after)).as("files outside the pool").isEqualTo(outsidePool(before));
        assertThat(after)
                .as("files inside the pool too: every call above failed or had nothing to do")
                .isEqualTo(before);
        assertThat(controller.pool().volumes().find(volumeId)).isPresent();
        assertThat(controller.pool().snapshots().find(snapshotId)).isPresent();
        assertThat(controller.pool().volumes().get(volumeId).attachments()).isEmpty();
    }

    @Test
    void hostileNamesOnlyEverBecomeFilesInsideThePool() throws IOException {
        Map<String, String> before = outsidePool(tree());
        var stub = controller.stub();
        for (String name : List.of("../../sentinel", "/etc/passwd", "a/b/c", "..", "../volumes/" + volumeId)) {
            String id = stub.createVolume(createRequest(name, MIB).build())
                    .getVolume()
                    .getVolumeId();
            assertThat(id).matches("vol-[0-9a-f]{32}").isNotEqualTo(volumeId);
            assertThat(poolDir.resolve("volumes").resolve(id + ".img")).exists();
            String snap = stub.createSnapshot(CreateSnapshotRequest.newBuilder()
                            .setName(name)
                            .setSourceVolumeId(id)
                            .build())
                    .getSnapshot()
                    .getSnapshotId();
            assertThat(snap).matches("snap-[0-9a-f]{32}").isNotEqualTo(snapshotId);
        }
        StatusRuntimeException tooLong = org.assertj.core.api.Assertions.catchThrowableOfType(
                StatusRuntimeException.class,
                () -> stub.createVolume(createRequest("n".repeat(200), MIB).build()));
        assertThat(tooLong.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        StatusRuntimeException withNul = org.assertj.core.api.Assertions.catchThrowableOfType(
                StatusRuntimeException.class,
                () -> stub.createVolume(createRequest("x\0y", MIB).build()));
        assertThat(withNul.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);

        assertThat(outsidePool(tree())).isEqualTo(before);
    }

    private static void check(SoftAssertions softly, String rpc, String id, Runnable call, Set<Status.Code> allowed) {
        Status status;
        try {
            call.run();
            status = Status.OK;
        } catch (StatusRuntimeException e) {
            status = e.getStatus();
        }
        softly.assertThat(status.getCode())
                .as("%s(%s): %s", rpc, Quoting.quote(id), status.getDescription())
                .isIn(allowed);
        if (status.getDescription() != null) {
            softly.assertThat(status.getDescription())
                    .as("%s(%s) must not leak file content", rpc, Quoting.quote(id))
                    .doesNotContain(SECRET);
        }
    }

    /** Every path under the test's base directory with its type, size and modification time. */
    private Map<String, String> tree() throws IOException {
        Map<String, String> entries = new TreeMap<>();
        try (Stream<Path> paths = Files.walk(base)) {
            for (Path path : paths.toList()) {
                BasicFileAttributes attributes =
                        Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
                entries.put(
                        base.relativize(path).toString(),
                        (attributes.isDirectory() ? "dir " : "file ") + attributes.size() + " "
                                + attributes.lastModifiedTime().toInstant());
            }
        }
        Path passwd = Path.of("/etc/passwd");
        if (Files.exists(passwd)) {
            entries.put(
                    "/etc/passwd",
                    Files.size(passwd) + " " + Files.getLastModifiedTime(passwd).toInstant());
        }
        return entries;
    }

    private Map<String, String> outsidePool(Map<String, String> tree) {
        String pool = base.relativize(poolDir).toString();
        Map<String, String> outside = new TreeMap<>(tree);
        outside.keySet().removeIf(path -> path.equals(pool) || path.startsWith(pool + "/"));
        return outside;
    }
}
