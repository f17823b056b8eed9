package dev.blockpool.driver;

import csi.v1.ControllerGrpc;
import csi.v1.Csi;
import csi.v1.IdentityGrpc;
import csi.v1.NodeGrpc;
import dev.blockpool.driver.logging.LogConfigurator;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * The CSI client of the driver's {@link AotTraining}, in a JVM of its own so that none of its
 * classes are in the driver's cache: the calls a CO makes first — probes, capabilities, a volume's
 * and a snapshot's life, node calls that answer without touching the host, and those a FlexVolume
 * mount and unmount make of a volume the node does not have.
 */
final class AotTrainingClient {

    /** The training driver's node. */
    static final String NODE_ID = "aot-training";

    private static final Csi.VolumeCapability MOUNT = Csi.VolumeCapability.newBuilder()
            .setMount(Csi.VolumeCapability.MountVolume.newBuilder().setFsType("ext4"))
            .setAccessMode(Csi.VolumeCapability.AccessMode.newBuilder()
                    .setMode(Csi.VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
            .build();

    private AotTrainingClient() {}

    /** Drives the driver on {@code socket}, with paths under {@code work}; 0 when every call went as trained. */
    static int run(Path socket, Path work) throws InterruptedException {
        // Netty warns of every connection's SO_KEEPALIVE, which a Unix socket lacks; the build output needs none of it.
        LogConfigurator.apply(LogConfigurator.LogFormat.TEXT, LogConfigurator.LogLevel.ERROR);
        EventLoopGroup loop = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
        ManagedChannel channel = NettyChannelBuilder.forAddress(new DomainSocketAddress(socket.toString()))
                .channelType(EpollDomainSocketChannel.class)
                .eventLoopGroup(loop)
                .usePlaintext()
                .build();
        try {
            awaitServing(IdentityGrpc.newBlockingStub(channel));
            // Enough rounds for the shared paths (gRPC, Netty, protobuf, logging) to be compiled in
            // training, which the cache's training data then compiles early; fewer left the first
            // node calls slower (docs/performance-memory.md, "One AOT cache per workload").
            for (int round = 0; round < 100; round++) {
                exercise(channel, work, round);
            }
            return 0;
        } catch (RuntimeException e) {
            System.err.println("blockpool-csi AOT training's client failed: " + e);
            return 1;
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            loop.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        }
    }

    /**
     * Waits until the driver answers a Probe, ready or not: a build machine may lack the host
     * tools that readiness asks for, and no call trained here runs them.
     */
    private static void awaitServing(IdentityGrpc.IdentityBlockingStub identity) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            try {
                identity.probe(Csi.ProbeRequest.getDefaultInstance());
                return;
            } catch (StatusRuntimeException notYet) {
                // the socket is not there yet
            }
            Thread.sleep(5);
        }
        throw new IllegalStateException("the driver did not start serving within 60 s");
    }

    private static void exercise(ManagedChannel channel, Path work, int round) {
        var identity = IdentityGrpc.newBlockingStub(channel);
        var controller = ControllerGrpc.newBlockingStub(channel);
        var node = NodeGrpc.newBlockingStub(channel);
        identity.probe(Csi.ProbeRequest.getDefaultInstance());
        identity.getPluginInfo(Csi.GetPluginInfoRequest.getDefaultInstance());
        identity.getPluginCapabilities(Csi.GetPluginCapabilitiesRequest.getDefaultInstance());
        controller.controllerGetCapabilities(Csi.ControllerGetCapabilitiesRequest.getDefaultInstance());
        node.nodeGetCapabilities(Csi.NodeGetCapabilitiesRequest.getDefaultInstance());
        node.nodeGetInfo(Csi.NodeGetInfoRequest.getDefaultInstance());
        controller.getCapacity(Csi.GetCapacityRequest.getDefaultInstance());

        String volume = controller
                .createVolume(Csi.CreateVolumeRequest.newBuilder()
                        .setName("training-" + round)
                        .setCapacityRange(Csi.CapacityRange.newBuilder().setRequiredBytes(16L << 20))
                        .addVolumeCapabilities(MOUNT)
                        .build())
                .getVolume()
                .getVolumeId();
        controller.listVolumes(
                Csi.ListVolumesRequest.newBuilder().setMaxEntries(100).build());
        controller.controllerGetVolume(
                Csi.ControllerGetVolumeRequest.newBuilder().setVolumeId(volume).build());
        controller.validateVolumeCapabilities(Csi.ValidateVolumeCapabilitiesRequest.newBuilder()
                .setVolumeId(volume)
                .addVolumeCapabilities(MOUNT)
                .build());
        controller.controllerPublishVolume(Csi.ControllerPublishVolumeRequest.newBuilder()
                .setVolumeId(volume)
                .setNodeId(NODE_ID)
                .setVolumeCapability(MOUNT)
                .build());
        // Node calls that answer from the mount table alone: the volume is not staged here.
        String staging = work.resolve("staging").toString();
        String target = work.resolve("target-" + round).toString();
        expectRefusal(() -> node.nodePublishVolume(Csi.NodePublishVolumeRequest.newBuilder()
                .setVolumeId(volume)
                .setStagingTargetPath(staging)
                .setTargetPath(target)
                .setVolumeCapability(MOUNT)
                .build()));
        expectRefusal(() -> node.nodeGetVolumeStats(Csi.NodeGetVolumeStatsRequest.newBuilder()
                .setVolumeId(volume)
                .setVolumePath(target)
                .build()));
        node.nodeUnpublishVolume(Csi.NodeUnpublishVolumeRequest.newBuilder()
                .setVolumeId(volume)
                .setTargetPath(target)
                .build());
        node.nodeUnstageVolume(Csi.NodeUnstageVolumeRequest.newBuilder()
                .setVolumeId(volume)
                .setStagingTargetPath(staging)
                .build());
        controller.controllerUnpublishVolume(Csi.ControllerUnpublishVolumeRequest.newBuilder()
                .setVolumeId(volume)
                .setNodeId(NODE_ID)
                .build());
        // What a FlexVolume mount asks of a volume the pool does not have: refused before the host is touched.
        expectRefusal(() -> node.nodeStageVolume(Csi.NodeStageVolumeRequest.newBuilder()
                .setVolumeId("vol-" + "0".repeat(32))
                .setStagingTargetPath(staging)
                .setVolumeCapability(MOUNT)
                .build()));

        String snapshot = controller
                .createSnapshot(Csi.CreateSnapshotRequest.newBuilder()
                        .setName("training-" + round)
                        .setSourceVolumeId(volume)
                        .build())
                .getSnapshot()
                .getSnapshotId();
        controller.listSnapshots(
                Csi.ListSnapshotsRequest.newBuilder().setMaxEntries(100).build());
        controller.deleteSnapshot(
                Csi.DeleteSnapshotRequest.newBuilder().setSnapshotId(snapshot).build());
        controller.deleteVolume(
                Csi.DeleteVolumeRequest.newBuilder().setVolumeId(volume).build());
        // A caller's mistake: the error mapping and its log line.
        expectRefusal(() -> controller.createVolume(Csi.CreateVolumeRequest.getDefaultInstance()));
    }

    private static void expectRefusal(Runnable call) {
        try {
            call.run();
        } catch (StatusRuntimeException expected) {
            // the refusal is what is being trained
        }
    }
}
