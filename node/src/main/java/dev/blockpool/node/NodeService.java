package dev.blockpool.node;

import csi.v1.Csi;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import csi.v1.NodeGrpc;
import dev.blockpool.common.CsiException;
import dev.blockpool.common.OperationLocks;
import dev.blockpool.common.UnaryReply;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.node.host.PathState;
import dev.blockpool.pool.Pool;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The CSI Node service: the Mount phase. Stage attaches the image as a loop device and mounts
 * its filesystem once per node (the global mount point); publish bind-mounts that into each
 * pod's target path. Each method validates, locks the volume, delegates to {@link NodeHost}
 * and maps the answer; a {@link CsiException} carries the status code to the interceptor.
 */
public final class NodeService extends NodeGrpc.NodeImplBase {

    static final String EPHEMERAL_SIZE = "size";
    static final long DEFAULT_EPHEMERAL_BYTES = 1L << 30;

    private final NodeIdentity identity;
    private final VolumeCatalog volumes;
    private final NodeHost host;
    private final OperationLocks locks;

    public NodeService(NodeIdentity identity, VolumeCatalog volumes, NodeHost host, OperationLocks locks) {
        this.identity = identity;
        this.volumes = volumes;
        this.host = host;
        this.locks = locks;
    }

    /** The service on the real host (mount, losetup, blkid, mkfs, fsck, resize tools) over the pool. */
    public static NodeService create(NodeIdentity identity, Pool pool, OperationLocks locks) {
        return create(identity, new PoolVolumeCatalog(pool), locks);
    }

    public static NodeService create(NodeIdentity identity, VolumeCatalog volumes, OperationLocks locks) {
        return new NodeService(identity, volumes, NodeHost.onThisHost(new ProcessCommandRunner()), locks);
    }

    @Override
    public void nodeStageVolume(Csi.NodeStageVolumeRequest request,
                                StreamObserver<Csi.NodeStageVolumeResponse> response) {
        String volumeId = required("volume_id", request.getVolumeId());
        Path staging = absolutePath("staging_target_path", request.getStagingTargetPath());
        Capability capability = Capability.of(request.hasVolumeCapability(), request.getVolumeCapability());
        boolean readOnly = capability.readOnly(false, request.getPublishContextMap());
        UnaryReply.send(response, locked(volumeId, () -> {
            NodeVolume volume = existing(volumeId);
            capability.requireServableBy(volume);
            if (capability.block()) {
                host.stageBlock(volume.image(), readOnly);
            } else {
                host.stageFilesystem(volume.image(), staging,
                        capability.filesystem(volume, request.getVolumeContextMap(), readOnly));
            }
            return Csi.NodeStageVolumeResponse.getDefaultInstance();
        }));
    }

    @Override
    public void nodeUnstageVolume(Csi.NodeUnstageVolumeRequest request,
                                  StreamObserver<Csi.NodeUnstageVolumeResponse> response) {
        String volumeId = required("volume_id", request.getVolumeId());
        Path staging = absolutePath("staging_target_path", request.getStagingTargetPath());
        UnaryReply.send(response, locked(volumeId, () -> {
            Optional<Path> image = volumes.imageOf(volumeId);
            if (image.isPresent()) {
                host.unstage(image.get(), staging);
            } else if (!(PathState.of(staging) instanceof PathState.Missing) && host.isMountPoint(staging)) {
                throw CsiException.notFound("volume %s does not exist; %s is left as it is", volumeId, staging);
            }
            return Csi.NodeUnstageVolumeResponse.getDefaultInstance();
        }));
    }

    @Override
    public void nodePublishVolume(Csi.NodePublishVolumeRequest request,
                                  StreamObserver<Csi.NodePublishVolumeResponse> response) {
        String volumeId = required("volume_id", request.getVolumeId());
        Path target = absolutePath("target_path", request.getTargetPath());
        Capability capability = Capability.of(request.hasVolumeCapability(), request.getVolumeCapability());
        boolean readOnly = capability.readOnly(request.getReadonly(), request.getPublishContextMap());
        Map<String, String> context = request.getVolumeContextMap();
        if ("true".equals(context.get(VolumeCatalog.EPHEMERAL))) {
            if (volumes.isVolumeId(volumeId)) {
                // kubelet names an inline volume csi-<hash>; a volume ID with this context is a PV's attributes.
                throw CsiException.invalidArgument("volume %s is a volume of the pool, not an ephemeral inline volume: "
                        + "its volume_context must not set %s", volumeId, VolumeCatalog.EPHEMERAL);
            }
            UnaryReply.send(response, locked(volumeId, () -> publishEphemeral(volumeId, target, capability, context, readOnly)));
            return;
        }
        Path staging = absolutePath("staging_target_path", request.getStagingTargetPath());
        UnaryReply.send(response, locked(volumeId, () -> {
            NodeVolume volume = existing(volumeId);
            capability.requireServableBy(volume);
            boolean singleWriter = capability.mode() == Mode.SINGLE_NODE_SINGLE_WRITER;
            if (capability.block()) {
                host.publishBlock(volume.image(), target, readOnly, singleWriter);
            } else {
                host.publishFilesystem(volume.image(), staging, target, readOnly, capability.options(), singleWriter);
            }
            return Csi.NodePublishVolumeResponse.getDefaultInstance();
        }));
    }

    private Csi.NodePublishVolumeResponse publishEphemeral(String handle, Path target, Capability capability,
                                                           Map<String, String> context, boolean readOnly) {
        if (capability.block()) {
            throw CsiException.invalidArgument("an ephemeral inline volume is a filesystem; block access is not offered");
        }
        long size = Optional.ofNullable(context.get(EPHEMERAL_SIZE)).map(s -> Quantity.parseBytes(EPHEMERAL_SIZE, s))
                .orElse(DEFAULT_EPHEMERAL_BYTES);
        String fsType = capability.fsType().orElseGet(() -> Capability.fallbackType(context, Optional.empty())).fsName();
        NodeVolume volume = volumes.createEphemeral(handle, size, fsType);
        try {
            host.publishEphemeral(volume.image(), target, capability.filesystem(volume, context, readOnly));
        } catch (RuntimeException e) {
            // Nobody will unpublish what was never published: unless a retry finds the volume
            // mounted (an earlier publish succeeded), it is released and deleted here.
            try {
                if (host.releaseLoopsIfUnused(volume.image())) {
                    volumes.delete(volume);
                }
            } catch (RuntimeException cleanup) {
                e.addSuppressed(cleanup);
            }
            throw e;
        }
        return Csi.NodePublishVolumeResponse.getDefaultInstance();
    }

    @Override
    public void nodeUnpublishVolume(Csi.NodeUnpublishVolumeRequest request,
                                    StreamObserver<Csi.NodeUnpublishVolumeResponse> response) {
        String volumeId = required("volume_id", request.getVolumeId());
        Path target = absolutePath("target_path", request.getTargetPath());
        UnaryReply.send(response, locked(volumeId, () -> {
            Optional<NodeVolume> volume = volumes.find(volumeId);
            Optional<Path> image = volume.map(NodeVolume::image).or(() -> volumes.imageOf(volumeId));
            if (image.isPresent()) {
                host.unpublish(image.get(), target);
            } else if (!(PathState.of(target) instanceof PathState.Missing)) {
                throw CsiException.notFound("volume %s does not exist; %s is left as it is", volumeId, target);
            }
            if (volume.isPresent() && volume.get().ephemeral()) {
                host.releaseLoops(volume.get().image());
                volumes.delete(volume.get());
            }
            return Csi.NodeUnpublishVolumeResponse.getDefaultInstance();
        }));
    }

    @Override
    public void nodeGetVolumeStats(Csi.NodeGetVolumeStatsRequest request,
                                   StreamObserver<Csi.NodeGetVolumeStatsResponse> response) {
        String volumeId = required("volume_id", request.getVolumeId());
        String volumePath = required("volume_path", request.getVolumePath());
        NodeVolume volume = existing(volumeId);
        Path path = Path.of(volumePath);
        NodeHost.Usage usage = (path.isAbsolute() ? host.usage(volume.image(), hostPath(path))
                : Optional.<NodeHost.Usage>empty())
                .orElseThrow(() -> CsiException.notFound("volume %s is not mounted at %s", volumeId, volumePath));
        UnaryReply.send(response, VolumeStatsMapper.toResponse(usage));
    }

    @Override
    public void nodeExpandVolume(Csi.NodeExpandVolumeRequest request,
                                 StreamObserver<Csi.NodeExpandVolumeResponse> response) {
        String volumeId = required("volume_id", request.getVolumeId());
        String volumePath = required("volume_path", request.getVolumePath());
        boolean block = request.hasVolumeCapability() && request.getVolumeCapability().hasBlock();
        long required = request.getCapacityRange().getRequiredBytes();
        UnaryReply.send(response, locked(volumeId, () -> {
            NodeVolume volume = existing(volumeId);
            Path given = Path.of(volumePath);
            Path path = given.isAbsolute() ? hostPath(given) : given;
            if (!path.isAbsolute() || PathState.of(path) instanceof PathState.Missing) {
                throw CsiException.notFound("volume path %s does not exist", volumePath);
            }
            long capacity = host.expand(volume.image(), path, block);
            if (capacity < required) {
                throw CsiException.failedPrecondition(
                        "the volume's image is %d bytes, less than the %d requested: ControllerExpandVolume grows it first",
                        capacity, required);
            }
            return Csi.NodeExpandVolumeResponse.newBuilder().setCapacityBytes(capacity).build();
        }));
    }

    @Override
    public void nodeGetCapabilities(Csi.NodeGetCapabilitiesRequest request,
                                    StreamObserver<Csi.NodeGetCapabilitiesResponse> response) {
        Csi.NodeGetCapabilitiesResponse.Builder builder = Csi.NodeGetCapabilitiesResponse.newBuilder();
        for (Csi.NodeServiceCapability.RPC.Type type : List.of(
                Csi.NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME,
                Csi.NodeServiceCapability.RPC.Type.GET_VOLUME_STATS,
                Csi.NodeServiceCapability.RPC.Type.EXPAND_VOLUME,
                Csi.NodeServiceCapability.RPC.Type.VOLUME_CONDITION,
                Csi.NodeServiceCapability.RPC.Type.SINGLE_NODE_MULTI_WRITER)) {
            builder.addCapabilities(Csi.NodeServiceCapability.newBuilder()
                    .setRpc(Csi.NodeServiceCapability.RPC.newBuilder().setType(type)));
        }
        UnaryReply.send(response, builder.build());
    }

    @Override
    public void nodeGetInfo(Csi.NodeGetInfoRequest request, StreamObserver<Csi.NodeGetInfoResponse> response) {
        UnaryReply.send(response, Csi.NodeGetInfoResponse.newBuilder()
                .setNodeId(identity.nodeId())
                .setMaxVolumesPerNode(identity.maxVolumesPerNode())
                .setAccessibleTopology(Csi.Topology.newBuilder().putAllSegments(identity.topology()))
                .build());
    }

    // ---- helpers -------------------------------------------------------------------------

    private NodeVolume existing(String volumeId) {
        return volumes.find(volumeId).orElseThrow(() -> CsiException.notFound("volume %s does not exist", volumeId));
    }

    private <T> T locked(String volumeId, Supplier<T> work) {
        return locks.withLock(work, volumeId);
    }


    static String required(String field, String value) {
        if (value.isEmpty()) {
            throw CsiException.invalidArgument("%s is required", field);
        }
        if (value.indexOf('\0') >= 0 || value.length() > 4096) {
            throw CsiException.invalidArgument("%s is not a usable value", field);
        }
        return value;
    }

    static Path absolutePath(String field, String value) {
        Path path = Path.of(required(field, value));
        if (!path.isAbsolute() || path.getNameCount() == 0) {
            throw CsiException.invalidArgument("%s must be an absolute path below /, got \"%s\"", field, value);
        }
        return hostPath(path);
    }

    /**
     * The path as the mount table shows it: the kernel records mount points with symlinks
     * resolved, so the parent directory is resolved (when it exists) and the last name appended.
     * The last name itself is not followed: it is the mount point, which may be a broken mount.
     */
    static Path hostPath(Path path) {
        Path parent = path.getParent();
        Path last = path.getFileName();
        if (parent != null && last != null && !last.toString().equals(".") && !last.toString().equals("..")) {
            try {
                return parent.toRealPath().resolve(last);
            } catch (IOException | SecurityException e) {
                // the parent does not exist (yet): nothing can be mounted at the path
            }
        }
        return path.normalize();
    }
}
