package dev.blockpool.node;

import csi.v1.Csi.NodeExpandVolumeRequest;
import csi.v1.Csi.NodeExpandVolumeResponse;
import csi.v1.Csi.NodeGetCapabilitiesRequest;
import csi.v1.Csi.NodeGetCapabilitiesResponse;
import csi.v1.Csi.NodeGetInfoRequest;
import csi.v1.Csi.NodeGetInfoResponse;
import csi.v1.Csi.NodeGetStorageHealthRequest;
import csi.v1.Csi.NodeGetStorageHealthResponse;
import csi.v1.Csi.NodeGetVolumeHealthRequest;
import csi.v1.Csi.NodeGetVolumeHealthResponse;
import csi.v1.Csi.NodeGetVolumeStatsRequest;
import csi.v1.Csi.NodeGetVolumeStatsResponse;
import csi.v1.Csi.NodePublishVolumeRequest;
import csi.v1.Csi.NodePublishVolumeResponse;
import csi.v1.Csi.NodeServiceCapability;
import csi.v1.Csi.NodeStageVolumeRequest;
import csi.v1.Csi.NodeStageVolumeResponse;
import csi.v1.Csi.NodeUnpublishVolumeRequest;
import csi.v1.Csi.NodeUnpublishVolumeResponse;
import csi.v1.Csi.NodeUnstageVolumeRequest;
import csi.v1.Csi.NodeUnstageVolumeResponse;
import csi.v1.Csi.Topology;
import csi.v1.NodeGrpc;
import dev.blockpool.common.FsType;
import dev.blockpool.common.HealthProblem;
import dev.blockpool.common.OperationLocks;
import dev.blockpool.csi.Capability;
import dev.blockpool.csi.CsiException;
import dev.blockpool.csi.CsiKeys;
import dev.blockpool.csi.HealthMessages;
import dev.blockpool.csi.InPlaceCalls;
import dev.blockpool.csi.Quantity;
import dev.blockpool.csi.RequestFields;
import dev.blockpool.csi.Sizes;
import dev.blockpool.csi.UnaryReply;
import dev.blockpool.host.KubeletPaths;
import dev.blockpool.host.NodeHost;
import dev.blockpool.host.VolumeStats;
import dev.blockpool.host.mounts.MountTable;
import dev.blockpool.host.mounts.PathState;
import dev.blockpool.pool.PoolHealth;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.function.Supplier;

/**
 * The CSI Node service: the Mount phase. Stage attaches the image as a loop device and mounts
 * its filesystem once per node (the global mount point); publish bind-mounts that into each
 * pod's target path. Each method validates, locks the volume, delegates to the {@link NodeHost}
 * and maps the answer.
 */
public final class NodeService extends NodeGrpc.NodeImplBase {

    static final long DEFAULT_EPHEMERAL_BYTES = 1L << 30;
    static final List<NodeServiceCapability.RPC.Type> CAPABILITIES = List.of(
            NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME,
            NodeServiceCapability.RPC.Type.GET_VOLUME_STATS,
            NodeServiceCapability.RPC.Type.EXPAND_VOLUME,
            NodeServiceCapability.RPC.Type.SINGLE_NODE_MULTI_WRITER,
            NodeServiceCapability.RPC.Type.GET_VOLUME_HEALTH,
            NodeServiceCapability.RPC.Type.GET_STORAGE_HEALTH);
    /** A frozen file system as the health calls name it. */
    static final String FROZEN = "FileSystemFrozen";

    private final NodeIdentity identity;
    private final VolumeCatalog volumes;
    private final NodeHost host;
    private final KubeletPaths paths;
    private final OperationLocks locks;
    private final FullPoolGuard fullPoolGuard;
    private final Executor restOfInPlaceCalls;
    private final FrozenVolumes frozen;
    private final PublishedIoLimits ioLimits;

    /**
     * {@code restOfInPlaceCalls}: where a stats call answered in place goes on when the kernel's
     * caches do not resolve its path; it refuses when its threads are all taken. {@code frozen}:
     * what a group snapshot of this driver holds frozen, told in NodeGetVolumeHealth.
     */
    public NodeService(
            NodeIdentity identity,
            VolumeCatalog volumes,
            NodeHost host,
            KubeletPaths paths,
            OperationLocks locks,
            Executor restOfInPlaceCalls,
            FrozenVolumes frozen) {
        this.identity = identity;
        this.restOfInPlaceCalls = restOfInPlaceCalls;
        this.volumes = volumes;
        this.host = host;
        this.paths = paths;
        this.locks = locks;
        this.fullPoolGuard = new FullPoolGuard(host, volumes);
        this.frozen = frozen;
        this.ioLimits = new PublishedIoLimits(host, volumes, locks);
    }

    @Override
    public void nodeStageVolume(NodeStageVolumeRequest request, StreamObserver<NodeStageVolumeResponse> response) {
        String volumeId = RequestFields.id("volume_id", request.getVolumeId());
        Path staging = kubeletPath("staging_target_path", request.getStagingTargetPath());
        Capability capability = Capability.required(request.hasVolumeCapability(), request.getVolumeCapability());
        boolean readOnly = MountRequests.readOnly(capability, false, request.getPublishContextMap());
        UnaryReply.send(response, locked(volumeId, () -> {
            NodeVolume volume = existing(volumeId);
            MountRequests.requireServable(capability, volume);
            if (capability.block()) {
                host.staging().stageBlock(volume.image(), staging, readOnly);
            } else {
                host.staging()
                        .stageFilesystem(
                                volume.image(),
                                staging,
                                MountRequests.filesystem(capability, volume, request.getVolumeContextMap(), readOnly));
            }
            return NodeStageVolumeResponse.getDefaultInstance();
        }));
    }

    @Override
    public void nodeUnstageVolume(
            NodeUnstageVolumeRequest request, StreamObserver<NodeUnstageVolumeResponse> response) {
        String volumeId = RequestFields.id("volume_id", request.getVolumeId());
        Path staging = kubeletPath("staging_target_path", request.getStagingTargetPath());
        UnaryReply.send(response, locked(volumeId, () -> {
            Optional<Path> image = volumes.imageOf(volumeId);
            if (image.isPresent()) {
                host.staging().unstage(image.get(), staging);
            } else if (!(PathState.of(staging) instanceof PathState.Missing)
                    && host.staging().isMountPoint(staging)) {
                throw CsiException.notFound("volume %s does not exist; %s is left as it is", volumeId, staging);
            }
            return NodeUnstageVolumeResponse.getDefaultInstance();
        }));
    }

    @Override
    public void nodePublishVolume(
            NodePublishVolumeRequest request, StreamObserver<NodePublishVolumeResponse> response) {
        String volumeId = RequestFields.id("volume_id", request.getVolumeId());
        Path target = kubeletPath("target_path", request.getTargetPath());
        Capability capability = Capability.required(request.hasVolumeCapability(), request.getVolumeCapability());
        boolean readOnly = MountRequests.readOnly(capability, request.getReadonly(), request.getPublishContextMap());
        Map<String, String> context = request.getVolumeContextMap();
        if ("true".equals(context.get(CsiKeys.EPHEMERAL))) {
            if (!request.getStagingTargetPath().isEmpty()) { // unused by an inline volume, but never a bad one
                kubeletPath("staging_target_path", request.getStagingTargetPath());
            }
            if (volumes.isVolumeId(volumeId)) {
                // kubelet names an inline volume csi-<hash>; a volume ID with this context is a PV's attributes.
                throw CsiException.invalidArgument(
                        "volume %s is a volume of the pool, not an ephemeral inline volume: "
                                + "its volume_context must not set %s",
                        volumeId, CsiKeys.EPHEMERAL);
            }
            UnaryReply.send(
                    response, locked(volumeId, () -> publishInline(volumeId, target, capability, context, readOnly)));
            return;
        }
        Path staging = kubeletPath("staging_target_path", request.getStagingTargetPath());
        if (target.startsWith(staging) || staging.startsWith(target)) {
            throw CsiException.invalidArgument(
                    "target_path %s and staging_target_path %s overlap; a pod's target is "
                            + "never the node's staging path, nor inside it",
                    target, staging);
        }
        // SINGLE_NODE_SINGLE_WRITER checks the volume's other publishes: it has the volume to
        // itself. A raw block publish binds the staged device, or a read-only device of its own.
        boolean alone = capability.singleWriter();
        UnaryReply.send(response, publishing(volumeId, target, alone, () -> {
            NodeVolume volume = existing(volumeId);
            MountRequests.requireServable(capability, volume);
            if (capability.block()) {
                host.publishing().publishBlock(volume.image(), target, readOnly, capability.singleWriter());
            } else {
                host.publishing()
                        .publishFilesystem(
                                volume.image(),
                                staging,
                                target,
                                readOnly,
                                capability.filesystemFlags(),
                                capability.singleWriter());
            }
            // A retry finds the publish made and sets the limits again: none is given to a pod unlimited.
            ioLimits.applyAt(volume, target);
            return NodePublishVolumeResponse.getDefaultInstance();
        }));
    }

    private NodePublishVolumeResponse publishInline(
            String handle, Path target, Capability capability, Map<String, String> context, boolean readOnly) {
        if (capability.block()) {
            throw CsiException.invalidArgument(
                    "an ephemeral inline volume is a filesystem; block access is not offered");
        }
        FsType fsType = capability.fsType().orElseGet(() -> MountRequests.fallbackType(context, Optional.empty()));
        // As large as asked, and at least what its filesystem can be made on.
        long size = Math.max(
                fsType.minimumBytes(),
                Optional.ofNullable(context.get(CsiKeys.EPHEMERAL_SIZE))
                        .map(s -> Quantity.parseBytes(CsiKeys.EPHEMERAL_SIZE, s))
                        .orElse(DEFAULT_EPHEMERAL_BYTES));
        NodeVolume volume = volumes.createEphemeral(handle, size, fsType.fsName());
        try {
            host.publishing()
                    .publishInline(
                            volume.image(), target, MountRequests.filesystem(capability, volume, context, readOnly));
        } catch (RuntimeException e) {
            // Nobody will unpublish what was never published: unless a retry finds the volume
            // mounted (an earlier publish succeeded), it is released and deleted here.
            try {
                if (host.loops().releaseAllIfUnused(volume.image())) {
                    volumes.delete(volume);
                }
            } catch (RuntimeException cleanup) {
                e.addSuppressed(cleanup);
            }
            throw e;
        }
        return NodePublishVolumeResponse.getDefaultInstance();
    }

    @Override
    public void nodeUnpublishVolume(
            NodeUnpublishVolumeRequest request, StreamObserver<NodeUnpublishVolumeResponse> response) {
        String volumeId = RequestFields.id("volume_id", request.getVolumeId());
        Path target = kubeletPath("target_path", request.getTargetPath());
        // An inline volume goes with its publish: it has the volume to itself. A raw block
        // target releases only the read-only loop device its own publish attached.
        boolean alone = !volumes.isVolumeId(volumeId);
        UnaryReply.send(response, publishing(volumeId, target, alone, () -> {
            // A volume of the pool is unpublished without reading its record: its image follows
            // from its ID, and a pool that does not answer then does not hold up a pod's teardown.
            // Only an inline volume's handle is looked up.
            Optional<NodeVolume> inline = volumes.isVolumeId(volumeId) ? Optional.empty() : volumes.find(volumeId);
            Optional<Path> image = volumes.imageOf(volumeId).or(() -> inline.map(NodeVolume::image));
            if (image.isPresent()) {
                host.publishing().unpublish(image.get(), target);
            } else if (!(PathState.of(target) instanceof PathState.Missing)) {
                throw CsiException.notFound("volume %s does not exist; %s is left as it is", volumeId, target);
            }
            // An inline volume goes with its last publish (a retry may have published it twice).
            if (inline.isPresent()
                    && inline.get().ephemeral()
                    && host.loops().releaseAllIfUnused(inline.get().image())) {
                volumes.delete(inline.get());
            }
            return NodeUnpublishVolumeResponse.getDefaultInstance();
        }));
    }

    @Override
    public void nodeGetVolumeStats(
            NodeGetVolumeStatsRequest request, StreamObserver<NodeGetVolumeStatsResponse> response) {
        String volumeId = RequestFields.id("volume_id", request.getVolumeId());
        String volumePath = RequestFields.bounded("volume_path", request.getVolumePath(), RequestFields.MAX_PATH_BYTES);
        // Answered from the kernel's view of this node, not from the pool: kubelet asks every
        // minute for every volume, and a shared pool's record is a network round trip away (or a
        // pool that does not answer). First from the kernel's caches alone, which never waits
        // (the call runs in place); else from the mount table, where a lookup may wait. A path
        // that holds no mount of the volume's image is NOT_FOUND, whether or not the volume exists.
        Path path = Path.of(volumePath);
        Path image = volumes.imageFor(volumeId);
        Optional<VolumeStats.Usage> cached =
                path.isAbsolute() ? host.stats().usageFromCaches(image, path) : Optional.empty();
        if (cached.isPresent()) {
            UnaryReply.send(response, VolumeStatsMapper.toResponse(cached.get()));
            return;
        }
        InPlaceCalls.elsewhere(
                restOfInPlaceCalls,
                response,
                NodeGrpc.getNodeGetVolumeStatsMethod().getFullMethodName(),
                () -> VolumeStatsMapper.toResponse(usageInMountTable(volumeId, image, volumePath)));
    }

    private VolumeStats.Usage usageInMountTable(String volumeId, Path image, String volumePath) {
        Path path = Path.of(volumePath);
        return (path.isAbsolute()
                        ? host.stats().usage(image, MountTable.asListed(path))
                        : Optional.<VolumeStats.Usage>empty())
                .orElseThrow(() -> CsiException.notFound("volume %s is not mounted at %s", volumeId, volumePath));
    }

    /**
     * The pool's view of the volume and what this node sees where it uses it: every mount of its
     * image, and the paths given, which may still show a mount whose device has gone.
     */
    @Override
    public void nodeGetVolumeHealth(
            NodeGetVolumeHealthRequest request, StreamObserver<NodeGetVolumeHealthResponse> response) {
        String volumeId = RequestFields.id("volume_id", request.getVolumeId());
        List<Path> paths = new ArrayList<>();
        if (!request.getVolumePublishPath().isEmpty()) {
            paths.add(MountTable.asListed(
                    RequestFields.absolutePath("volume_publish_path", request.getVolumePublishPath())));
        }
        if (!request.getStagingTargetPath().isEmpty()) {
            paths.add(MountTable.asListed(
                    RequestFields.absolutePath("staging_target_path", request.getStagingTargetPath())));
        }
        List<HealthProblem> problems = new ArrayList<>(volumes.health(volumeId));
        frozen.frozen(volumeId)
                .ifPresent(why -> problems.add(new HealthProblem(HealthProblem.Severity.DEGRADED, FROZEN, why)));
        // A pool short of room is found here as soon as in the background look: act on it at once.
        fullPoolGuard.look(problems);
        // On a pool that does not answer, even where its image is cannot be resolved: that is the answer.
        if (!PoolHealth.unavailable(problems)) {
            volumes.imageOf(volumeId)
                    .or(() -> volumes.find(volumeId).map(NodeVolume::image))
                    .ifPresent(image -> problems.addAll(host.health().problems(image, paths)));
        }
        UnaryReply.send(
                response,
                NodeGetVolumeHealthResponse.newBuilder()
                        .setVolumeHealth(HealthMessages.volume(volumeId, problems))
                        .build());
    }

    @Override
    public void nodeGetStorageHealth(
            NodeGetStorageHealthRequest request, StreamObserver<NodeGetStorageHealthResponse> response) {
        var result = NodeGetStorageHealthResponse.newBuilder();
        volumes.storageHealth().forEach(problem -> result.addBackendHealth(HealthMessages.storage(problem)));
        UnaryReply.send(response, result.build());
    }

    @Override
    public void nodeExpandVolume(NodeExpandVolumeRequest request, StreamObserver<NodeExpandVolumeResponse> response) {
        String volumeId = RequestFields.id("volume_id", request.getVolumeId());
        String volumePath = RequestFields.bounded("volume_path", request.getVolumePath(), RequestFields.MAX_PATH_BYTES);
        boolean block =
                request.hasVolumeCapability() && request.getVolumeCapability().hasBlock();
        long required = request.getCapacityRange().getRequiredBytes();
        UnaryReply.send(response, locked(volumeId, () -> {
            NodeVolume volume = existing(volumeId);
            Path given = Path.of(volumePath);
            Path path = given.isAbsolute() ? MountTable.asListed(given) : given;
            if (!path.isAbsolute() || PathState.of(path) instanceof PathState.Missing) {
                throw CsiException.notFound("volume path %s does not exist", volumePath);
            }
            if (required > 0) {
                volumes.growImage(volume, Sizes.choose(request.getCapacityRange()));
            }
            long capacity = host.resizer().expand(volume.image(), path, block);
            if (capacity < required) {
                throw CsiException.failedPrecondition(
                        "the volume's image is %d bytes, less than the %d requested: "
                                + "ControllerExpandVolume grows it first",
                        capacity, required);
            }
            return NodeExpandVolumeResponse.newBuilder()
                    .setCapacityBytes(capacity)
                    .build();
        }));
    }

    @Override
    public void nodeGetCapabilities(
            NodeGetCapabilitiesRequest request, StreamObserver<NodeGetCapabilitiesResponse> response) {
        NodeGetCapabilitiesResponse.Builder builder = NodeGetCapabilitiesResponse.newBuilder();
        for (NodeServiceCapability.RPC.Type type : CAPABILITIES) {
            builder.addCapabilities(NodeServiceCapability.newBuilder()
                    .setRpc(NodeServiceCapability.RPC.newBuilder().setType(type)));
        }
        UnaryReply.send(response, builder.build());
    }

    @Override
    public void nodeGetInfo(NodeGetInfoRequest request, StreamObserver<NodeGetInfoResponse> response) {
        UnaryReply.send(
                response,
                NodeGetInfoResponse.newBuilder()
                        .setNodeId(identity.nodeId())
                        .setMaxVolumesPerNode(identity.maxVolumesPerNode())
                        .setAccessibleTopology(Topology.newBuilder().putAllSegments(identity.topology()))
                        .build());
    }

    private NodeVolume existing(String volumeId) {
        return volumes.find(volumeId).orElseThrow(() -> CsiException.notFound("volume %s does not exist", volumeId));
    }

    private <T> T locked(String volumeId, Supplier<T> work) {
        return locks.withLock(work, volumes.lockKey(volumeId));
    }

    /**
     * A publish or unpublish at {@code target}: the volume shared with those at its other
     * targets (a volume's pods start and stop together), the target alone; stage, unstage and
     * expansion have the volume to themselves. {@code alone}: this one has too.
     */
    private <T> T publishing(String volumeId, Path target, boolean alone, Supplier<T> work) {
        return alone ? locked(volumeId, work) : locks.withShared(work, volumes.lockKey(volumeId), target.toString());
    }

    /** A staging or target path from kubelet, as the mount table will list it, once it is one the node may use. */
    private Path kubeletPath(String field, String value) {
        return paths.check(field, RequestFields.absolutePath(field, value));
    }
}
