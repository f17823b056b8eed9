package dev.blockpool.controller;

import csi.v1.Csi.CreateVolumeGroupSnapshotRequest;
import csi.v1.Csi.CreateVolumeGroupSnapshotResponse;
import csi.v1.Csi.DeleteVolumeGroupSnapshotRequest;
import csi.v1.Csi.DeleteVolumeGroupSnapshotResponse;
import csi.v1.Csi.GetVolumeGroupSnapshotRequest;
import csi.v1.Csi.GetVolumeGroupSnapshotResponse;
import csi.v1.Csi.GroupControllerGetCapabilitiesRequest;
import csi.v1.Csi.GroupControllerGetCapabilitiesResponse;
import csi.v1.Csi.GroupControllerServiceCapability;
import csi.v1.Csi.VolumeGroupSnapshot;
import csi.v1.GroupControllerGrpc;
import dev.blockpool.common.OperationLocks;
import dev.blockpool.csi.CsiException;
import dev.blockpool.csi.PoolScope;
import dev.blockpool.csi.RequestFields;
import dev.blockpool.csi.UnaryReply;
import dev.blockpool.pool.GroupSnapshot;
import dev.blockpool.pool.GroupSnapshots;
import dev.blockpool.pool.Ids;
import dev.blockpool.pool.MemberFreeze;
import dev.blockpool.pool.Pool;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * CSI GroupController: group snapshots, several volumes snapshotted by one call (see
 * {@link GroupSnapshots} for how they are committed and what consistency they have). Each
 * member is an ordinary snapshot: ListSnapshots and GetSnapshot show it with its group, and
 * CreateVolume restores it like any other.
 */
public final class GroupControllerService extends GroupControllerGrpc.GroupControllerImplBase {

    private static final Logger log = LoggerFactory.getLogger(GroupControllerService.class);

    private final Pool pool;
    private final PoolChanges changes;
    private final MemberFreeze freeze;
    private final PoolScope scope;

    public GroupControllerService(Pool pool, OperationLocks locks) {
        this(pool, locks, MemberFreeze.NONE, PoolScope.shared());
    }

    /** {@code scope}: where the members are, as each member snapshot's accessible_topology says. */
    public GroupControllerService(Pool pool, OperationLocks locks, MemberFreeze freeze, PoolScope scope) {
        this.pool = pool;
        this.changes = new PoolChanges(pool, locks);
        this.freeze = freeze;
        this.scope = scope;
    }

    @Override
    public void groupControllerGetCapabilities(
            GroupControllerGetCapabilitiesRequest request,
            StreamObserver<GroupControllerGetCapabilitiesResponse> response) {
        UnaryReply.send(
                response,
                GroupControllerGetCapabilitiesResponse.newBuilder()
                        .addCapabilities(GroupControllerServiceCapability.newBuilder()
                                .setRpc(GroupControllerServiceCapability.RPC
                                        .newBuilder()
                                        .setType(
                                                GroupControllerServiceCapability.RPC
                                                        .Type
                                                        .CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT)))
                        .build());
    }

    @Override
    public void createVolumeGroupSnapshot(
            CreateVolumeGroupSnapshotRequest request, StreamObserver<CreateVolumeGroupSnapshotResponse> response) {
        String name = RequestFields.id("name", request.getName());
        List<String> volumeIds = request.getSourceVolumeIdsList().stream()
                .map(id -> RequestFields.id("source_volume_ids", id))
                .toList();
        if (volumeIds.isEmpty()) {
            throw CsiException.invalidArgument("source_volume_ids are required: the volumes to snapshot together");
        }
        if (Set.copyOf(volumeIds).size() != volumeIds.size()) {
            throw CsiException.invalidArgument("source_volume_ids name a volume more than once: %s", volumeIds);
        }
        // the group, its sources and its members: no other call copies, deletes or reconciles them meanwhile
        List<String> ids = new ArrayList<>(List.of(Ids.groupSnapshotIdFor(name)));
        ids.addAll(volumeIds);
        volumeIds.forEach(volumeId -> ids.add(GroupSnapshots.memberIdFor(name, volumeId)));
        GroupSnapshot group = changes.make(() -> take(name, volumeIds), ids.toArray(String[]::new));
        UnaryReply.send(
                response,
                CreateVolumeGroupSnapshotResponse.newBuilder()
                        .setGroupSnapshot(message(group))
                        .build());
    }

    /**
     * The group, its members taken while their file systems are frozen; a retry finds the group
     * made, and thaws what the call before it could not. Members that took longer than the
     * freeze may be held are not of one instant: the group is removed again, and the call fails.
     */
    private GroupSnapshot take(String name, List<String> volumeIds) {
        if (pool.groups().find(Ids.groupSnapshotIdFor(name)).isPresent()) {
            freeze.thawLeft(volumeIds);
            return pool.groups().create(name, volumeIds);
        }
        try (MemberFreeze.Frozen frozen = freeze.freeze(volumeIds)) {
            log.debug("group snapshot {}: file systems of {} frozen", name, frozen.volumeIds());
            GroupSnapshot group = pool.groups().create(name, volumeIds);
            if (!frozen.heldThroughout()) {
                pool.groups().delete(group.id(), List.of());
                throw CsiException.aborted(
                        "group snapshot %s took longer than its members' file systems may stay frozen, and they "
                                + "were thawed before every member was taken: the group, not of one instant, is "
                                + "removed; retry it when the pool is less busy",
                        name);
            }
            return group;
        }
    }

    @Override
    public void deleteVolumeGroupSnapshot(
            DeleteVolumeGroupSnapshotRequest request, StreamObserver<DeleteVolumeGroupSnapshotResponse> response) {
        String groupId = RequestFields.id("group_snapshot_id", request.getGroupSnapshotId());
        List<String> expected = request.getSnapshotIdsList();
        List<String> ids = new ArrayList<>(List.of(groupId));
        pool.groups().find(groupId).ifPresent(g -> ids.addAll(g.snapshotIds()));
        changes.make(() -> pool.groups().delete(groupId, expected), ids.toArray(String[]::new));
        UnaryReply.send(response, DeleteVolumeGroupSnapshotResponse.getDefaultInstance());
    }

    @Override
    public void getVolumeGroupSnapshot(
            GetVolumeGroupSnapshotRequest request, StreamObserver<GetVolumeGroupSnapshotResponse> response) {
        String groupId = RequestFields.id("group_snapshot_id", request.getGroupSnapshotId());
        GroupSnapshot group = pool.groups().get(groupId, request.getSnapshotIdsList());
        UnaryReply.send(
                response,
                GetVolumeGroupSnapshotResponse.newBuilder()
                        .setGroupSnapshot(message(group))
                        .build());
    }

    private VolumeGroupSnapshot message(GroupSnapshot group) {
        var result = VolumeGroupSnapshot.newBuilder()
                .setGroupSnapshotId(group.id())
                .setCreationTime(ProtoMapper.timestamp(group.createdAt()))
                .setReadyToUse(true);
        pool.groups().members(group).forEach(member -> result.addSnapshots(ProtoMapper.snapshot(member, scope)));
        return result.build();
    }
}
