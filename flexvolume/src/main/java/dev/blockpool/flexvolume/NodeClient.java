package dev.blockpool.flexvolume;

import csi.v1.Csi;
import csi.v1.NodeGrpc;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The node plugin's CSI Node service over its Unix socket: the four calls a FlexVolume mount and
 * unmount are made of. Every volume is a filesystem volume, single-node-writer as kubelet's CSI
 * path stages a ReadWriteOnce PV; a read-only PV is published read-only. A refused call is a
 * {@link FlexFailure} with the plugin's own message.
 */
final class NodeClient implements AutoCloseable {

    /** Staging may format a large volume; kubelet runs mount without a deadline of its own. */
    private static final Duration DEADLINE = Duration.ofMinutes(5);

    private final Path socket;
    private final EventLoopGroup loop;
    private final ManagedChannel channel;
    private final NodeGrpc.NodeBlockingStub node;

    NodeClient(Path socket) {
        this.socket = socket;
        this.loop = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
        this.channel = NettyChannelBuilder.forAddress(new DomainSocketAddress(socket.toString()))
                .channelType(EpollDomainSocketChannel.class)
                .eventLoopGroup(loop)
                .directExecutor()
                .usePlaintext()
                .build();
        this.node = NodeGrpc.newBlockingStub(channel);
    }

    void stage(String volumeId, Path staging, FlexOptions options) {
        call(
                "NodeStageVolume",
                volumeId,
                () -> stub().nodeStageVolume(Csi.NodeStageVolumeRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .setStagingTargetPath(staging.toString())
                        .setVolumeCapability(capability(options))
                        .build()));
    }

    void publish(String volumeId, Path staging, Path target, FlexOptions options) {
        call(
                "NodePublishVolume",
                volumeId,
                () -> stub().nodePublishVolume(Csi.NodePublishVolumeRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .setStagingTargetPath(staging.toString())
                        .setTargetPath(target.toString())
                        .setVolumeCapability(capability(options))
                        .setReadonly(options.readOnly())
                        .build()));
    }

    void unpublish(String volumeId, Path target) {
        call(
                "NodeUnpublishVolume",
                volumeId,
                () -> stub().nodeUnpublishVolume(Csi.NodeUnpublishVolumeRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .setTargetPath(target.toString())
                        .build()));
    }

    void unstage(String volumeId, Path staging) {
        call(
                "NodeUnstageVolume",
                volumeId,
                () -> stub().nodeUnstageVolume(Csi.NodeUnstageVolumeRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .setStagingTargetPath(staging.toString())
                        .build()));
    }

    private static Csi.VolumeCapability capability(FlexOptions options) {
        return Csi.VolumeCapability.newBuilder()
                .setMount(Csi.VolumeCapability.MountVolume.newBuilder()
                        .setFsType(options.fsType().map(Object::toString).orElse("")))
                .setAccessMode(Csi.VolumeCapability.AccessMode.newBuilder()
                        .setMode(Csi.VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
                .build();
    }

    private NodeGrpc.NodeBlockingStub stub() {
        return node.withDeadlineAfter(DEADLINE.toMillis(), TimeUnit.MILLISECONDS);
    }

    private void call(String method, String volumeId, Supplier<?> call) {
        try {
            call.get();
        } catch (StatusRuntimeException e) {
            throw failure(method, volumeId, e.getStatus());
        }
    }

    private FlexFailure failure(String method, String volumeId, Status status) {
        if (status.getCode() == Status.Code.UNAVAILABLE) {
            String cause = Optional.ofNullable(deepest(status.getCause()))
                    .or(() -> Optional.ofNullable(status.getDescription()))
                    .orElse("no answer");
            return new FlexFailure(
                    "the blockpool node plugin does not answer on %s (is its DaemonSet running on this " + "node?): %s",
                    socket, cause);
        }
        return new FlexFailure(
                "%s of %s failed: %s (%s)",
                method, volumeId, Optional.ofNullable(status.getDescription()).orElse("no message"), status.getCode());
    }

    /** The innermost message: the transport's own ("connect(..) failed: Connection refused"), not gRPC's wrapper. */
    private static String deepest(Throwable cause) {
        String message = null;
        for (Throwable t = cause; t != null; t = t.getCause()) {
            message = t.getMessage() != null ? t.getMessage() : message;
        }
        return message;
    }

    @Override
    public void close() {
        channel.shutdownNow();
        loop.shutdownGracefully(0, 0, TimeUnit.SECONDS);
    }
}
