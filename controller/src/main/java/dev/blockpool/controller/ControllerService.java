package dev.blockpool.controller;

import com.google.protobuf.Int64Value;
import csi.v1.ControllerGrpc;
import csi.v1.Csi.ControllerExpandVolumeRequest;
import csi.v1.Csi.ControllerExpandVolumeResponse;
import csi.v1.Csi.ControllerGetCapabilitiesRequest;
import csi.v1.Csi.ControllerGetCapabilitiesResponse;
import csi.v1.Csi.ControllerGetVolumeHealthRequest;
import csi.v1.Csi.ControllerGetVolumeHealthResponse;
import csi.v1.Csi.ControllerGetVolumeRequest;
import csi.v1.Csi.ControllerGetVolumeResponse;
import csi.v1.Csi.ControllerListVolumeHealthRequest;
import csi.v1.Csi.ControllerListVolumeHealthResponse;
import csi.v1.Csi.ControllerModifyVolumeRequest;
import csi.v1.Csi.ControllerModifyVolumeResponse;
import csi.v1.Csi.ControllerPublishVolumeRequest;
import csi.v1.Csi.ControllerPublishVolumeResponse;
import csi.v1.Csi.ControllerServiceCapability;
import csi.v1.Csi.ControllerServiceCapability.RPC.Type;
import csi.v1.Csi.ControllerUnpublishVolumeRequest;
import csi.v1.Csi.ControllerUnpublishVolumeResponse;
import csi.v1.Csi.CreateSnapshotRequest;
import csi.v1.Csi.CreateSnapshotResponse;
import csi.v1.Csi.CreateVolumeRequest;
import csi.v1.Csi.CreateVolumeResponse;
import csi.v1.Csi.DeleteSnapshotRequest;
import csi.v1.Csi.DeleteSnapshotResponse;
import csi.v1.Csi.DeleteVolumeRequest;
import csi.v1.Csi.DeleteVolumeResponse;
import csi.v1.Csi.GetCapacityRequest;
import csi.v1.Csi.GetCapacityResponse;
import csi.v1.Csi.GetSnapshotRequest;
import csi.v1.Csi.GetSnapshotResponse;
import csi.v1.Csi.ListSnapshotsRequest;
import csi.v1.Csi.ListSnapshotsResponse;
import csi.v1.Csi.ListVolumesRequest;
import csi.v1.Csi.ListVolumesResponse;
import csi.v1.Csi.ValidateVolumeCapabilitiesRequest;
import csi.v1.Csi.ValidateVolumeCapabilitiesResponse;
import dev.blockpool.common.OperationLocks;
import dev.blockpool.common.Quoting;
import dev.blockpool.csi.Capability;
import dev.blockpool.csi.CsiException;
import dev.blockpool.csi.CsiKeys;
import dev.blockpool.csi.HealthMessages;
import dev.blockpool.csi.PoolScope;
import dev.blockpool.csi.RequestFields;
import dev.blockpool.csi.Sizes;
import dev.blockpool.csi.UnaryReply;
import dev.blockpool.pool.AccessType;
import dev.blockpool.pool.Allocation;
import dev.blockpool.pool.Attachment;
import dev.blockpool.pool.ContentSource;
import dev.blockpool.pool.Ids;
import dev.blockpool.pool.NodeHolds;
import dev.blockpool.pool.NodeIoLimits;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.PoolHealth;
import dev.blockpool.pool.Snapshot;
import dev.blockpool.pool.Volume;
import dev.blockpool.pool.VolumeSpec;
import dev.blockpool.pool.records.Page;
import dev.blockpool.pool.transfer.ImageImports;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * CSI Controller: the Provision and Attach phases, on the pool. Each RPC validates its request,
 * takes the per-ID lock, lets the pool do the work and maps the result; the pool's exceptions
 * carry their CSI codes.
 */
public final class ControllerService extends ControllerGrpc.ControllerImplBase {

    private static final Logger log = LoggerFactory.getLogger(ControllerService.class);

    /** What a controller on a shared pool offers. */
    static final Set<Type> CAPABILITIES = Set.of(
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
            Type.SINGLE_NODE_MULTI_WRITER,
            Type.GET_VOLUME_HEALTH,
            Type.LIST_VOLUME_HEALTH,
            Type.MODIFY_VOLUME);

    /**
     * What a controller on its node's own pool leaves out: the calls one cluster-wide sidecar
     * makes, for a volume on any node, of whichever node's driver it runs beside. Nothing is
     * attached (the volume is only on its node; CSIDriver attachRequired: false), its image
     * grows in NodeExpandVolume, and a VolumeAttributesClass is applied only where the peer
     * channel reaches the volume's node ({@link #capabilities}).
     */
    static final Set<Type> CLUSTER_WIDE = Set.of(
            Type.PUBLISH_UNPUBLISH_VOLUME,
            Type.PUBLISH_READONLY,
            Type.LIST_VOLUMES_PUBLISHED_NODES,
            Type.EXPAND_VOLUME,
            Type.MODIFY_VOLUME);

    private final Pool pool;
    private final PoolChanges changes;
    private final PoolScope scope;
    private final NodeHolds holds;
    private final RemoteRestores restores;
    private final OtherNodes otherNodes;
    private final NodeIoLimits nodeIoLimits;

    public ControllerService(Pool pool, OperationLocks locks) {
        this(pool, locks, PoolScope.shared());
    }

    public ControllerService(Pool pool, OperationLocks locks, PoolScope scope) {
        this(pool, locks, scope, NodeHolds.NONE);
    }

    /** {@code holds}: what holds a volume on this node, where the driver serves the node too. */
    public ControllerService(Pool pool, OperationLocks locks, PoolScope scope, NodeHolds holds) {
        this(pool, locks, scope, holds, OtherNodes.NONE);
    }

    /**
     * {@code otherNodes}: the other nodes' pools, from which a node-local pool restores and clones
     * a source it lacks.
     */
    public ControllerService(Pool pool, OperationLocks locks, PoolScope scope, NodeHolds holds, OtherNodes otherNodes) {
        this(pool, locks, scope, holds, otherNodes, NodeIoLimits.NONE);
    }

    /** {@code nodeIoLimits}: what applies a volume's changed I/O limits on this node, where the driver serves it too. */
    public ControllerService(
            Pool pool,
            OperationLocks locks,
            PoolScope scope,
            NodeHolds holds,
            OtherNodes otherNodes,
            NodeIoLimits nodeIoLimits) {
        this(pool, locks, scope, holds, otherNodes, nodeIoLimits, RemoteRestores.WAIT_WITHOUT_DEADLINE);
    }

    /** {@code waitWithoutDeadline}: how long a CreateVolume without a deadline waits for its pull. */
    ControllerService(
            Pool pool,
            OperationLocks locks,
            PoolScope scope,
            NodeHolds holds,
            OtherNodes otherNodes,
            NodeIoLimits nodeIoLimits,
            Duration waitWithoutDeadline) {
        this.pool = pool;
        this.changes = new PoolChanges(pool, locks);
        this.scope = scope;
        this.holds = holds;
        this.restores = new RemoteRestores(new ImageImports(pool), otherNodes, waitWithoutDeadline);
        this.otherNodes = otherNodes;
        this.nodeIoLimits = nodeIoLimits;
    }

    /** UNIMPLEMENTED for a call this scope does not offer. */
    private void requireServed(Type capability) {
        if (!capabilities(scope, otherNodes.reachesAny()).contains(capability)) {
            throw CsiException.unimplemented(
                    "%s is not offered on a node-local pool (--pool-scope node): see docs/deploy.md", capability);
        }
    }

    /**
     * The capabilities a controller of this scope advertises. On a node-local pool whose driver
     * reaches the other nodes ({@code reachesOtherNodes}), ControllerModifyVolume too: it is handed
     * to the volume's node when the volume is in another node's pool.
     */
    static Set<Type> capabilities(PoolScope scope, boolean reachesOtherNodes) {
        return scope instanceof PoolScope.NodeLocal
                ? CAPABILITIES.stream()
                        .filter(type ->
                                !CLUSTER_WIDE.contains(type) || (type == Type.MODIFY_VOLUME && reachesOtherNodes))
                        .collect(Collectors.toSet())
                : CAPABILITIES;
    }

    @Override
    public void createVolume(CreateVolumeRequest request, StreamObserver<CreateVolumeResponse> response) {
        String name = RequestFields.id("name", request.getName());
        List<Capability> capabilities = Capabilities.require(request.getVolumeCapabilitiesList());
        VolumeParameters parameters = VolumeParameters.parse(
                request.getParametersMap(), request.getMutableParamsMap(), Capabilities.fsType(capabilities));
        Optional<ContentSource> source = ProtoMapper.contentSource(request);
        scope.requireReachable(request.getAccessibilityRequirements(), "volume");
        Set<AccessType> accessTypes = Capabilities.accessTypes(capabilities);
        // A filesystem volume is at least what mkfs accepts; a block volume is never formatted.
        long minimum =
                accessTypes.contains(AccessType.MOUNT) ? parameters.fsType().minimumBytes() : 0;
        // Without a capacity range a restore or clone is as large as its source.
        OptionalLong requested = source.isPresent() && !request.hasCapacityRange()
                ? OptionalLong.empty()
                : OptionalLong.of(Sizes.choose(request.getCapacityRange(), minimum));
        String volumeId = Ids.volumeIdFor(name);
        Optional<RemoteRestores.Pull> pull = source.flatMap(s -> pullFromOtherNode(s, volumeId, requested));
        if (pull.isEmpty()) {
            source.ifPresent(s -> requireLocalSource(s, volumeId, request));
        }
        long size = requested.orElseGet(
                () -> pull.map(RemoteRestores.Pull::sizeBytes).orElseGet(() -> sourceSize(source.get(), volumeId)));
        VolumeSpec spec = new VolumeSpec(
                name,
                size,
                parameters.fsType().fsName(),
                parameters.allocation(),
                accessTypes,
                request.getParametersMap(),
                source,
                request.getCapacityRange().getLimitBytes(),
                parameters.ioLimits());
        String sourceId = source.map(ContentSource::id).orElse("");
        Volume volume = pull.isPresent()
                ? restores.finish(pull.get(), () -> changes.make(() -> restores.createVolume(spec), volumeId))
                : changes.make(() -> pool.volumes().create(spec), volumeId, sourceId);
        UnaryReply.send(
                response,
                CreateVolumeResponse.newBuilder()
                        .setVolume(ProtoMapper.volume(volume, scope))
                        .build());
    }

    /**
     * On a node-local pool, the pull of a source this pool lacks from the other node's pool that
     * holds it, for a volume not yet made (OUT_OF_RANGE, before it starts, when the source is
     * larger than {@code requested}); empty when the pool holds the source, or the volume
     * exists (a retry answers with it), or no other node holds the source. Only the acting
     * controller pulls.
     */
    private Optional<RemoteRestores.Pull> pullFromOtherNode(
            ContentSource source, String volumeId, OptionalLong requested) {
        if (!(scope instanceof PoolScope.NodeLocal)
                || pool.volumes().holds(source)
                || pool.volumes().find(volumeId).isPresent()) {
            return Optional.empty();
        }
        return changes.make(() -> restores.pull(source, volumeId, requested));
    }

    /**
     * The size of a restore or clone that asks for none: its source's, or, for a retry of one
     * whose source is in another node's pool, the volume's as it was made.
     */
    private long sourceSize(ContentSource source, String volumeId) {
        if (!pool.volumes().holds(source)) {
            Optional<Volume> made = pool.volumes().find(volumeId);
            if (made.isPresent()) {
                return made.get().capacityBytes();
            }
        }
        return pool.volumes().sourceSize(source);
    }

    /**
     * A restore or clone is made in the pool of its source, or pulled from the other node's pool
     * that holds it. On a node-local pool, a source neither this pool nor another node's holds,
     * asked for a node the CO chose, may be in the pool of a node this driver does not reach:
     * RESOURCE_EXHAUSTED has external-provisioner give the node up and the scheduler choose again
     * (see {@link PoolScope#requireReachable}), where NOT_FOUND would retry on this node for ever.
     * Asked with no placement, it is NOT_FOUND, as on a shared pool. A volume made already is
     * answered as it is, wherever its source now is.
     */
    private void requireLocalSource(ContentSource source, String volumeId, CreateVolumeRequest request) {
        if (scope instanceof PoolScope.NodeLocal local
                && PoolScope.placed(request.getAccessibilityRequirements())
                && !pool.volumes().holds(source)
                && pool.volumes().find(volumeId).isEmpty()) {
            throw CsiException.resourceExhausted(
                    "source %s %s is not in the pool of node %s: a restore or clone is made on the node that "
                            + "holds its source; schedule the pod there (node selector %s)",
                    source.kind().name().toLowerCase(Locale.ROOT),
                    Quoting.quote(source.id()),
                    local.nodeId(),
                    CsiKeys.TOPOLOGY_NODE);
        }
    }

    @Override
    public void deleteVolume(DeleteVolumeRequest request, StreamObserver<DeleteVolumeResponse> response) {
        String volumeId = RequestFields.id("volume_id", request.getVolumeId());
        changes.make(() -> pool.volumes().delete(volumeId, this::requireNotHeld), volumeId);
        UnaryReply.send(response, DeleteVolumeResponse.getDefaultInstance());
    }

    /** What holds the volume on this node, in words; empty when nothing does, or the pool holds no such volume. */
    public Optional<String> holderHere(String volumeId) {
        return pool.volumes().find(volumeId).flatMap(holds::of);
    }

    /**
     * Deletes this pool's copy of a volume that moved to {@code movedToNode}, whose pool committed
     * it, as DeleteVolume does: refused while the volume is staged or published here (the pod
     * still runs on this node); nothing when it is gone already.
     */
    public void retireHere(String volumeId, String movedToNode) {
        String id = RequestFields.id("volume_id", volumeId);
        changes.make(() -> pool.volumes().delete(id, this::requireNotHeld), id);
        log.info("retired volume {}: it moved to node {}", id, movedToNode);
    }

    /**
     * A volume staged or published on this node is in use, as the spec has it: its image would
     * be unlinked under a live loop device. FAILED_PRECONDITION has external-provisioner retry
     * until kubelet has unstaged it, as when a pod and its claim are deleted at once. Asked under
     * the volume's lock, which a stage of it on this node takes too.
     */
    private void requireNotHeld(Volume volume) {
        holds.of(volume).ifPresent(held -> {
            throw CsiException.failedPrecondition(
                    "volume %s is in use on node %s: its image is bound to %s; it can be deleted once it is "
                            + "unstaged there (NodeUnstageVolume, which kubelet calls once no pod on the node uses it)",
                    volume.id(), scope instanceof PoolScope.NodeLocal local ? local.nodeId() : "this node", held);
        });
    }

    @Override
    public void controllerPublishVolume(
            ControllerPublishVolumeRequest request, StreamObserver<ControllerPublishVolumeResponse> response) {
        requireServed(Type.PUBLISH_UNPUBLISH_VOLUME);
        String volumeId = RequestFields.id("volume_id", request.getVolumeId());
        String nodeId = RequestFields.id("node_id", request.getNodeId());
        Capability capability = Capability.required(request.hasVolumeCapability(), request.getVolumeCapability())
                .served();
        Attachment.Access access = request.getReadonly() ? Attachment.Access.READ_ONLY : Attachment.Access.READ_WRITE;
        Attachment.Sharing sharing =
                capability.singleNode() ? Attachment.Sharing.SINGLE_NODE : Attachment.Sharing.MULTI_NODE;
        changes.make(() -> pool.attachments().attach(volumeId, nodeId, access, sharing), volumeId);
        UnaryReply.send(
                response,
                ControllerPublishVolumeResponse.newBuilder()
                        .putPublishContext(CsiKeys.READONLY, Boolean.toString(request.getReadonly()))
                        .build());
    }

    @Override
    public void controllerUnpublishVolume(
            ControllerUnpublishVolumeRequest request, StreamObserver<ControllerUnpublishVolumeResponse> response) {
        requireServed(Type.PUBLISH_UNPUBLISH_VOLUME);
        String volumeId = RequestFields.id("volume_id", request.getVolumeId());
        Optional<String> nodeId = optional(request.getNodeId());
        changes.make(() -> pool.attachments().detach(volumeId, nodeId), volumeId);
        UnaryReply.send(response, ControllerUnpublishVolumeResponse.getDefaultInstance());
    }

    @Override
    public void validateVolumeCapabilities(
            ValidateVolumeCapabilitiesRequest request, StreamObserver<ValidateVolumeCapabilitiesResponse> response) {
        String volumeId = RequestFields.id("volume_id", request.getVolumeId());
        if (request.getVolumeCapabilitiesCount() == 0) {
            throw CsiException.invalidArgument("volume_capabilities are required");
        }
        Volume volume = pool.volumes().get(volumeId);
        Map<String, String> context = ProtoMapper.volume(volume, scope).getVolumeContextMap();
        Optional<String> unsupported = request.getVolumeCapabilitiesList().stream()
                .map(capability -> Capabilities.unsupported(capability, volume))
                .flatMap(Optional::stream)
                .findFirst()
                .or(() -> request.getParametersCount() > 0
                                && !request.getParametersMap().equals(volume.parameters())
                        ? Optional.of("parameters differ from those the volume was created with")
                        : Optional.empty())
                .or(() -> !context.entrySet()
                                .containsAll(request.getVolumeContextMap().entrySet())
                        ? Optional.of("volume_context differs from the one CreateVolume returned")
                        : Optional.empty());
        // Confirm only what was checked.
        var result = ValidateVolumeCapabilitiesResponse.newBuilder();
        if (unsupported.isPresent()) {
            result.setMessage(unsupported.get());
        } else {
            result.setConfirmed(ValidateVolumeCapabilitiesResponse.Confirmed.newBuilder()
                    .addAllVolumeCapabilities(request.getVolumeCapabilitiesList())
                    .putAllVolumeContext(request.getVolumeContextMap())
                    .putAllParameters(request.getParametersMap()));
        }
        UnaryReply.send(response, result.build());
    }

    @Override
    public void listVolumes(ListVolumesRequest request, StreamObserver<ListVolumesResponse> response) {
        int maxEntries = Pages.maxEntries(request.getMaxEntries());
        Page<Volume> page = pool.volumes().page(Pages.from(request.getStartingToken()), maxEntries);
        var result = ListVolumesResponse.newBuilder().setNextToken(Pages.nextToken(page));
        for (Volume volume : page.entries()) {
            result.addEntriesBuilder()
                    .setVolume(ProtoMapper.volume(volume, scope))
                    .setStatus(ProtoMapper.listStatus(volume));
        }
        UnaryReply.send(response, result.build());
    }

    @Override
    public void controllerGetVolume(
            ControllerGetVolumeRequest request, StreamObserver<ControllerGetVolumeResponse> response) {
        Volume volume = pool.volumes().get(RequestFields.id("volume_id", request.getVolumeId()));
        UnaryReply.send(
                response,
                ControllerGetVolumeResponse.newBuilder()
                        .setVolume(ProtoMapper.volume(volume, scope))
                        .setStatus(ProtoMapper.getStatus(volume))
                        .build());
    }

    @Override
    public void controllerGetVolumeHealth(
            ControllerGetVolumeHealthRequest request, StreamObserver<ControllerGetVolumeHealthResponse> response) {
        String volumeId = RequestFields.id("volume_id", request.getVolumeId());
        PoolHealth.VolumeHealth health = pool.health().volume(volumeId);
        UnaryReply.send(
                response,
                ControllerGetVolumeHealthResponse.newBuilder()
                        .setVolumeHealth(HealthMessages.volume(volumeId, health.problems()))
                        .build());
    }

    /** Only the volumes with a problem, a page of the pool at a time as ListVolumes reads it. */
    @Override
    public void controllerListVolumeHealth(
            ControllerListVolumeHealthRequest request, StreamObserver<ControllerListVolumeHealthResponse> response) {
        int maxEntries = Pages.maxEntries(request.getMaxEntries());
        Page<PoolHealth.VolumeHealth> page = pool.health().page(Pages.from(request.getStartingToken()), maxEntries);
        var result = ControllerListVolumeHealthResponse.newBuilder().setNextToken(Pages.nextToken(page));
        page.entries().forEach(h -> result.addEntries(HealthMessages.volume(h.volumeId(), h.problems())));
        UnaryReply.send(response, result.build());
    }

    @Override
    public void getCapacity(GetCapacityRequest request, StreamObserver<GetCapacityResponse> response) {
        request.getVolumeCapabilitiesList().forEach(Capability::parseServed);
        // What the pool may still promise to a volume of this class, so that CSIStorageCapacity never sends a
        // claim the create refuses.
        Allocation allocation = Optional.ofNullable(request.getParametersMap().get(CsiKeys.ALLOCATION))
                .map(Allocation::parse)
                .orElse(Allocation.SPARSE);
        long available = scope.capacityFor(
                request.hasAccessibleTopology() ? Optional.of(request.getAccessibleTopology()) : Optional.empty(),
                Sizes.roundDown(pool.capacity().read().promisableBytes(allocation)));
        UnaryReply.send(
                response,
                GetCapacityResponse.newBuilder()
                        .setAvailableCapacity(available)
                        .setMaximumVolumeSize(Int64Value.of(available))
                        .build());
    }

    @Override
    public void controllerExpandVolume(
            ControllerExpandVolumeRequest request, StreamObserver<ControllerExpandVolumeResponse> response) {
        requireServed(Type.EXPAND_VOLUME);
        String volumeId = RequestFields.id("volume_id", request.getVolumeId());
        if (request.getCapacityRange().getRequiredBytes() <= 0) {
            throw CsiException.invalidArgument("capacity_range.required_bytes is required: the size to grow to");
        }
        if (request.hasVolumeCapability()) {
            Capability.parseServed(request.getVolumeCapability());
        }
        long size = Sizes.choose(request.getCapacityRange());
        Volume volume = changes.make(() -> pool.volumes().expand(volumeId, size), volumeId);
        // The node must refresh the loop device and, for a filesystem, grow it.
        UnaryReply.send(
                response,
                ControllerExpandVolumeResponse.newBuilder()
                        .setCapacityBytes(volume.capacityBytes())
                        .setNodeExpansionRequired(true)
                        .build());
    }

    /**
     * Applies a VolumeAttributesClass: sparse to preallocated reserves every block of the image
     * now; preallocated to sparse keeps the blocks already reserved (which of them hold data only
     * the filesystem inside knows) and makes later growth sparse. Its I/O limits, with the
     * StorageClass's for the keys it leaves out, replace the volume's; each node that publishes
     * the volume applies them (this one at once, where it serves the node too).
     */
    @Override
    public void controllerModifyVolume(
            ControllerModifyVolumeRequest request, StreamObserver<ControllerModifyVolumeResponse> response) {
        requireServed(Type.MODIFY_VOLUME);
        String volumeId = RequestFields.id("volume_id", request.getVolumeId());
        VolumeParameters.mutable(request.getMutableParamsMap()); // refused here, before any node is asked
        // On a node-local pool the one csi-resizer calls whichever node's driver it runs beside.
        if (scope instanceof PoolScope.NodeLocal
                && pool.volumes().find(volumeId).isEmpty()
                && otherNodes.modifyVolume(request)) {
            UnaryReply.send(response, ControllerModifyVolumeResponse.getDefaultInstance());
            return;
        }
        UnaryReply.send(response, modifyHere(request));
    }

    /**
     * ControllerModifyVolume of a volume in this node's pool, never handed on: what this node
     * applies when another node's controller hands it the call. NOT_FOUND when the volume is not here.
     */
    public ControllerModifyVolumeResponse modifyHere(ControllerModifyVolumeRequest request) {
        String volumeId = RequestFields.id("volume_id", request.getVolumeId());
        VolumeParameters.Mutable mutable = VolumeParameters.mutable(request.getMutableParamsMap());
        changes.make(
                () -> {
                    Volume volume = pool.volumes().get(volumeId);
                    mutable.allocation().ifPresent(a -> pool.volumes().changeAllocation(volume, a));
                    Volume limited = pool.volumes().changeIoLimits(volume, mutable.ioLimitsOver(volume.parameters()));
                    nodeIoLimits.apply(limited);
                },
                volumeId);
        return ControllerModifyVolumeResponse.getDefaultInstance();
    }

    @Override
    public void controllerGetCapabilities(
            ControllerGetCapabilitiesRequest request, StreamObserver<ControllerGetCapabilitiesResponse> response) {
        var result = ControllerGetCapabilitiesResponse.newBuilder();
        capabilities(scope, otherNodes.reachesAny()).stream()
                .sorted()
                .forEach(type -> result.addCapabilities(ControllerServiceCapability.newBuilder()
                        .setRpc(ControllerServiceCapability.RPC.newBuilder().setType(type))));
        UnaryReply.send(response, result.build());
    }

    @Override
    public void createSnapshot(CreateSnapshotRequest request, StreamObserver<CreateSnapshotResponse> response) {
        String name = RequestFields.id("name", request.getName());
        String sourceId = RequestFields.id("source_volume_id", request.getSourceVolumeId());
        // The snapshot is made in the pool of its volume: on a node-local pool, this node's.
        scope.requireReachable(request.getAccessibilityRequirements(), "snapshot");
        // A retry answers with the snapshot taken before, even once its source is deleted.
        Snapshot snapshot = changes.make(
                () -> pool.snapshots().create(name, sourceId, pool.volumes()), Ids.snapshotIdFor(name), sourceId);
        UnaryReply.send(
                response,
                CreateSnapshotResponse.newBuilder()
                        .setSnapshot(ProtoMapper.snapshot(snapshot, scope))
                        .build());
    }

    @Override
    public void deleteSnapshot(DeleteSnapshotRequest request, StreamObserver<DeleteSnapshotResponse> response) {
        String snapshotId = RequestFields.id("snapshot_id", request.getSnapshotId());
        changes.make(() -> pool.snapshots().deleteAlone(snapshotId, pool.groups()), snapshotId);
        UnaryReply.send(response, DeleteSnapshotResponse.getDefaultInstance());
    }

    @Override
    public void listSnapshots(ListSnapshotsRequest request, StreamObserver<ListSnapshotsResponse> response) {
        int maxEntries = Pages.maxEntries(request.getMaxEntries());
        Page<Snapshot> page = pool.snapshots()
                .page(
                        Pages.from(request.getStartingToken()),
                        maxEntries,
                        optional(request.getSnapshotId()),
                        optional(request.getSourceVolumeId()));
        var result = ListSnapshotsResponse.newBuilder().setNextToken(Pages.nextToken(page));
        page.entries().forEach(s -> result.addEntriesBuilder().setSnapshot(ProtoMapper.snapshot(s, scope)));
        UnaryReply.send(response, result.build());
    }

    @Override
    public void getSnapshot(GetSnapshotRequest request, StreamObserver<GetSnapshotResponse> response) {
        String snapshotId = RequestFields.id("snapshot_id", request.getSnapshotId());
        Snapshot snapshot = pool.snapshots()
                .find(snapshotId)
                .orElseThrow(() -> CsiException.notFound("snapshot %s does not exist", Quoting.quote(snapshotId)));
        UnaryReply.send(
                response,
                GetSnapshotResponse.newBuilder()
                        .setSnapshot(ProtoMapper.snapshot(snapshot, scope))
                        .build());
    }

    /** An optional string field: empty when not set. */
    private static Optional<String> optional(String field) {
        return Optional.of(field).filter(value -> !value.isEmpty());
    }
}
