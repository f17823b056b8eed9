package dev.blockpool.controller;

import static dev.blockpool.controller.ControllerHarness.MIB;
import static dev.blockpool.controller.ControllerHarness.createRequest;
import static dev.blockpool.controller.ControllerHarness.fromSnapshot;
import static dev.blockpool.csi.StatusAssertions.failure;
import static org.assertj.core.api.Assertions.assertThat;

import csi.v1.Csi.CreateVolumeGroupSnapshotRequest;
import csi.v1.Csi.DeleteSnapshotRequest;
import csi.v1.Csi.DeleteVolumeGroupSnapshotRequest;
import csi.v1.Csi.GetSnapshotRequest;
import csi.v1.Csi.GetVolumeGroupSnapshotRequest;
import csi.v1.Csi.GroupControllerGetCapabilitiesRequest;
import csi.v1.Csi.GroupControllerServiceCapability;
import csi.v1.Csi.ListSnapshotsRequest;
import csi.v1.Csi.Snapshot;
import csi.v1.Csi.VolumeGroupSnapshot;
import dev.blockpool.common.StorageException;
import dev.blockpool.pool.Ids;
import dev.blockpool.pool.MemberFreeze;
import io.grpc.Status;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The GroupController service over gRPC on a pool in a temporary directory. */
class GroupControllerServiceTest {

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

    @Test
    void oneCallSnapshotsEveryVolumeAndAMemberRestoresLikeAnySnapshot() throws IOException {
        String a = volumeWith("pvc-a", "alpha");
        String b = volumeWith("pvc-b", "beta");

        VolumeGroupSnapshot group = create("group-1", a, b);
        assertThat(group.getReadyToUse()).isTrue();
        assertThat(group.getSnapshotsList())
                .extracting(Snapshot::getSourceVolumeId)
                .containsExactly(a, b);
        assertThat(group.getSnapshotsList()).allSatisfy(s -> {
            assertThat(s.getGroupSnapshotId()).isEqualTo(group.getGroupSnapshotId());
            assertThat(s.getReadyToUse()).isTrue();
        });
        // idempotent by name, also after a restart; the order of the volumes does not matter
        controller.restart();
        assertThat(create("group-1", b, a)).isEqualTo(group);
        assertThat(get(group.getGroupSnapshotId(), List.of())).isEqualTo(group);
        assertThat(controller
                        .stub()
                        .listSnapshots(ListSnapshotsRequest.getDefaultInstance())
                        .getEntriesList())
                .extracting(e -> e.getSnapshot().getGroupSnapshotId())
                .containsExactly(group.getGroupSnapshotId(), group.getGroupSnapshotId());

        // the volume changes after the snapshot; the restored member has the data of the moment it was taken
        write(a, "later");
        Snapshot member = group.getSnapshots(0);
        String restored = controller
                .stub()
                .createVolume(createRequest("pvc-restored", 4 * MIB)
                        .setVolumeContentSource(fromSnapshot(member.getSnapshotId()))
                        .build())
                .getVolume()
                .getVolumeId();
        assertThat(read(restored)).isEqualTo("alpha");
    }

    @Test
    void aMemberIsDeletedOnlyWithItsGroupAndTheGroupDeletesItsMembers() throws IOException {
        VolumeGroupSnapshot group = create("group-del", volumeWith("pvc-c", "c"), volumeWith("pvc-d", "d"));
        String member = group.getSnapshots(0).getSnapshotId();
        assertThat(failure(
                        () -> controller
                                .stub()
                                .deleteSnapshot(DeleteSnapshotRequest.newBuilder()
                                        .setSnapshotId(member)
                                        .build()),
                        Status.Code.INVALID_ARGUMENT))
                .hasMessageContaining(group.getGroupSnapshotId())
                .hasMessageContaining("DeleteVolumeGroupSnapshot");
        assertThat(failure(
                        () -> controller
                                .groupStub()
                                .deleteVolumeGroupSnapshot(DeleteVolumeGroupSnapshotRequest.newBuilder()
                                        .setGroupSnapshotId(group.getGroupSnapshotId())
                                        .addSnapshotIds(member)
                                        .build()),
                        Status.Code.INVALID_ARGUMENT))
                .hasMessageContaining("not the snapshots");

        DeleteVolumeGroupSnapshotRequest delete = DeleteVolumeGroupSnapshotRequest.newBuilder()
                .setGroupSnapshotId(group.getGroupSnapshotId())
                .addAllSnapshotIds(group.getSnapshotsList().stream()
                        .map(Snapshot::getSnapshotId)
                        .toList())
                .build();
        controller.groupStub().deleteVolumeGroupSnapshot(delete);
        controller.groupStub().deleteVolumeGroupSnapshot(delete);
        assertThat(controller
                        .stub()
                        .listSnapshots(ListSnapshotsRequest.getDefaultInstance())
                        .getEntriesList())
                .isEmpty();
        assertThat(poolDir.resolve("snapshots")).isEmptyDirectory();
        failure(() -> get(group.getGroupSnapshotId(), List.of()), Status.Code.NOT_FOUND);
    }

    @Test
    void badRequestsGetTheirCodes() throws IOException {
        String a = volumeWith("pvc-e", "e");
        create("group-taken", a);
        failure(
                () -> controller
                        .groupStub()
                        .createVolumeGroupSnapshot(CreateVolumeGroupSnapshotRequest.newBuilder()
                                .addSourceVolumeIds(a)
                                .build()),
                Status.Code.INVALID_ARGUMENT);
        assertThat(failure(() -> create("group-empty"), Status.Code.INVALID_ARGUMENT))
                .hasMessageContaining("source_volume_ids");
        failure(() -> create("group-twice", a, a), Status.Code.INVALID_ARGUMENT);
        String f = volumeWith("pvc-f", "f");
        assertThat(failure(() -> create("group-taken", a, f), Status.Code.ALREADY_EXISTS))
                .hasMessageContaining("other volumes");
        failure(() -> create("group-missing", a, Ids.volumeIdFor("nope")), Status.Code.NOT_FOUND);
        failure(() -> get("", List.of()), Status.Code.INVALID_ARGUMENT);
        failure(() -> get("not-a-group", List.of()), Status.Code.NOT_FOUND);
        controller
                .groupStub()
                .deleteVolumeGroupSnapshot(DeleteVolumeGroupSnapshotRequest.newBuilder()
                        .setGroupSnapshotId("not-a-group")
                        .build());
        // nothing of the refused creates is left: only the one member of group-taken
        assertThat(controller
                        .stub()
                        .listSnapshots(ListSnapshotsRequest.getDefaultInstance())
                        .getEntriesList())
                .hasSize(1);
        assertThat(controller
                        .groupStub()
                        .groupControllerGetCapabilities(GroupControllerGetCapabilitiesRequest.getDefaultInstance())
                        .getCapabilitiesList())
                .extracting(c -> c.getRpc().getType())
                .containsExactly(GroupControllerServiceCapability.RPC.Type.CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT);
    }

    @Test
    void theGroupRecordIsTheCommitPoint() throws IOException {
        String a = volumeWith("pvc-g", "g");
        String b = volumeWith("pvc-h", "h");
        VolumeGroupSnapshot group = create("group-crash", a, b);
        Path record = poolDir.resolve("groups").resolve(group.getGroupSnapshotId() + ".json");

        // a create that died after its members, before its record: a retry takes the members up again
        Files.delete(record);
        assertThat(create("group-crash", a, b).getSnapshotsList())
                .extracting(Snapshot::getSnapshotId)
                .containsExactlyElementsOf(group.getSnapshotsList().stream()
                        .map(Snapshot::getSnapshotId)
                        .toList());

        // a delete that died after the record: the reconcile of a restarted driver removes the members
        Files.delete(record);
        controller.restart();
        for (Snapshot member : group.getSnapshotsList()) {
            failure(
                    () -> controller
                            .stub()
                            .getSnapshot(GetSnapshotRequest.newBuilder()
                                    .setSnapshotId(member.getSnapshotId())
                                    .build()),
                    Status.Code.NOT_FOUND);
        }
        assertThat(poolDir.resolve("snapshots")).isEmptyDirectory();
    }

    @Test
    void aGroupWhoseMembersWereThawedBeforeAllWereTakenFailsAbortedAndIsRemoved() throws IOException {
        ScriptedFreeze freeze = new ScriptedFreeze();
        freeze.heldThroughout = false; // the freeze outlived its bound while the members were taken
        restartWith(freeze);
        String a = volumeWith("pvc-a", "alpha");
        String b = volumeWith("pvc-b", "beta");

        failure(() -> create("group-slow", a, b), Status.Code.ABORTED);

        assertThat(freeze.calls).containsExactly("freeze " + List.of(a, b), "close");
        assertThat(controller.pool().groups().find(Ids.groupSnapshotIdFor("group-slow")))
                .as("not of one instant: removed")
                .isEmpty();
    }

    @Test
    void aRetryOfAGroupMadeWhileItsThawFailedThawsWhatTheFirstCallLeft() throws IOException {
        ScriptedFreeze freeze = new ScriptedFreeze();
        freeze.thawFailure = StorageException.unavailable("the file system of the volume is not thawed");
        restartWith(freeze);
        String a = volumeWith("pvc-a", "alpha");
        String b = volumeWith("pvc-b", "beta");
        failure(() -> create("group-1", a, b), Status.Code.UNAVAILABLE);
        freeze.thawFailure = null;
        freeze.calls.clear();

        VolumeGroupSnapshot group = create("group-1", a, b);

        assertThat(group.getSnapshotsCount()).isEqualTo(2);
        assertThat(freeze.calls).containsExactly("thawLeft " + List.of(a, b));
    }

    private void restartWith(MemberFreeze freeze) {
        controller.close();
        controller = new ControllerHarness(poolDir, freeze);
    }

    /** A freeze that records what the group snapshot asks of it, and answers as the test says. */
    private static final class ScriptedFreeze implements MemberFreeze {
        final List<String> calls = new ArrayList<>();
        boolean heldThroughout = true;
        RuntimeException thawFailure;

        @Override
        public Frozen freeze(List<String> volumeIds) {
            calls.add("freeze " + volumeIds);
            return new Frozen() {
                @Override
                public List<String> volumeIds() {
                    return volumeIds;
                }

                @Override
                public boolean heldThroughout() {
                    return heldThroughout;
                }

                @Override
                public void close() {
                    calls.add("close");
                    if (thawFailure != null) {
                        throw thawFailure;
                    }
                }
            };
        }

        @Override
        public void thawLeft(List<String> volumeIds) {
            calls.add("thawLeft " + volumeIds);
        }
    }

    private VolumeGroupSnapshot create(String name, String... volumeIds) {
        return controller
                .groupStub()
                .createVolumeGroupSnapshot(CreateVolumeGroupSnapshotRequest.newBuilder()
                        .setName(name)
                        .addAllSourceVolumeIds(List.of(volumeIds))
                        .build())
                .getGroupSnapshot();
    }

    private VolumeGroupSnapshot get(String groupId, List<String> snapshotIds) {
        return controller
                .groupStub()
                .getVolumeGroupSnapshot(GetVolumeGroupSnapshotRequest.newBuilder()
                        .setGroupSnapshotId(groupId)
                        .addAllSnapshotIds(snapshotIds)
                        .build())
                .getGroupSnapshot();
    }

    private String volumeWith(String name, String content) throws IOException {
        String id = controller
                .stub()
                .createVolume(createRequest(name, 4 * MIB).build())
                .getVolume()
                .getVolumeId();
        write(id, content);
        return id;
    }

    private void write(String volumeId, String content) throws IOException {
        Files.writeString(image(volumeId), content, StandardOpenOption.WRITE);
    }

    private String read(String volumeId) throws IOException {
        byte[] bytes = Files.readAllBytes(image(volumeId));
        return new String(bytes, StandardCharsets.UTF_8).replace("\0", "");
    }

    private Path image(String volumeId) {
        return poolDir.resolve("volumes").resolve(volumeId + ".img");
    }
}
