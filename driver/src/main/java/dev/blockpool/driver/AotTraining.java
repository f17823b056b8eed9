package dev.blockpool.driver;

import csi.v1.ControllerGrpc;
import csi.v1.Csi;
import csi.v1.IdentityGrpc;
import csi.v1.NodeGrpc;
import dev.blockpool.flexvolume.FlexVolume;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The workload the JVM's ahead-of-time cache is recorded from (JEP 483, 514, 515): the driver's own
 * command line starts it in {@code all} mode on a scratch pool and socket, and a gRPC client drives
 * the calls a CO makes first — probes, capabilities, a volume's and a snapshot's life, node calls
 * that answer without touching the host — so that the classes, their linking and the early method
 * profiles of those paths are in the cache. Nothing here attaches a loop device or mounts, so it
 * runs unprivileged and inside an image build.
 *
 * <p>Run with the runtime that will run the driver, since a cache only fits the JVM that made it:
 * {@code java -XX:AOTCacheOutput=blockpool-csi.aot -cp blockpool-csi.jar dev.blockpool.driver.AotTraining}.
 * The build and the image do; {@code bin/blockpool-csi} uses the cache found beside the jar. A
 * cache that is missing or does not fit only costs start-up time: the JVM says so and runs without it.
 */
public final class AotTraining {

    private static final Csi.VolumeCapability MOUNT = Csi.VolumeCapability.newBuilder()
            .setMount(Csi.VolumeCapability.MountVolume.newBuilder().setFsType("ext4"))
            .setAccessMode(Csi.VolumeCapability.AccessMode.newBuilder()
                    .setMode(Csi.VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
            .build();

    private AotTraining() {
    }

    public static void main(String[] args) throws Exception {
        Path work = Files.createTempDirectory("blockpool-aot-training");
        Path socket = work.resolve("csi.sock");
        PrintStream stderr = System.err;
        // The driver logs every call at info; the build output needs none of it.
        System.setErr(new PrintStream(OutputStream.nullOutputStream()));
        Thread driver = Thread.ofPlatform().daemon().start(() -> Main.run("--endpoint", "unix://" + socket,
                "--pool-dir", work.resolve("pool").toString(), "--node-id", "aot-training", "--log-level", "info",
                "--max-volumes-per-node", "8"));
        EventLoopGroup loop = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
        ManagedChannel channel = NettyChannelBuilder.forAddress(new DomainSocketAddress(socket.toString()))
                .channelType(EpollDomainSocketChannel.class).eventLoopGroup(loop).usePlaintext().build();
        int status = 0;
        try {
            awaitServing(IdentityGrpc.newBlockingStub(channel), driver);
            for (int round = 0; round < 20; round++) {
                exercise(channel, work, round);
            }
            exerciseFlexVolume(socket, work);
        } catch (RuntimeException | InterruptedException e) {
            stderr.println("blockpool-csi AOT training failed: " + e);
            status = 1;
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            loop.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            removeTree(work.resolve("pool"));
        }
        // Exit through the driver's shutdown hook, the way a SIGTERM ends it; the JVM writes the cache on exit.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> removeTree(work)));
        System.exit(status);
    }

    /**
     * Waits until the driver answers a Probe, ready or not: a build machine may lack the host
     * tools that readiness asks for, and no call trained here runs them.
     */
    private static void awaitServing(IdentityGrpc.IdentityBlockingStub identity, Thread driver)
            throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline && driver.isAlive()) {
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

        String volume = controller.createVolume(Csi.CreateVolumeRequest.newBuilder().setName("training-" + round)
                .setCapacityRange(Csi.CapacityRange.newBuilder().setRequiredBytes(16L << 20))
                .addVolumeCapabilities(MOUNT).build()).getVolume().getVolumeId();
        controller.listVolumes(Csi.ListVolumesRequest.newBuilder().setMaxEntries(100).build());
        controller.controllerGetVolume(Csi.ControllerGetVolumeRequest.newBuilder().setVolumeId(volume).build());
        controller.validateVolumeCapabilities(Csi.ValidateVolumeCapabilitiesRequest.newBuilder()
                .setVolumeId(volume).addVolumeCapabilities(MOUNT).build());
        controller.controllerPublishVolume(Csi.ControllerPublishVolumeRequest.newBuilder().setVolumeId(volume)
                .setNodeId("aot-training").setVolumeCapability(MOUNT).build());
        // Node calls that answer from the mount table alone: the volume is not staged here.
        String target = work.resolve("target-" + round).toString();
        expectRefusal(() -> node.nodePublishVolume(Csi.NodePublishVolumeRequest.newBuilder().setVolumeId(volume)
                .setStagingTargetPath(work.resolve("staging").toString()).setTargetPath(target)
                .setVolumeCapability(MOUNT).build()));
        expectRefusal(() -> node.nodeGetVolumeStats(Csi.NodeGetVolumeStatsRequest.newBuilder().setVolumeId(volume)
                .setVolumePath(target).build()));
        node.nodeUnpublishVolume(Csi.NodeUnpublishVolumeRequest.newBuilder().setVolumeId(volume)
                .setTargetPath(target).build());
        node.nodeUnstageVolume(Csi.NodeUnstageVolumeRequest.newBuilder().setVolumeId(volume)
                .setStagingTargetPath(work.resolve("staging").toString()).build());
        controller.controllerUnpublishVolume(Csi.ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(volume)
                .setNodeId("aot-training").build());

        String snapshot = controller.createSnapshot(Csi.CreateSnapshotRequest.newBuilder()
                .setName("training-" + round).setSourceVolumeId(volume).build()).getSnapshot().getSnapshotId();
        controller.listSnapshots(Csi.ListSnapshotsRequest.newBuilder().setMaxEntries(100).build());
        controller.deleteSnapshot(Csi.DeleteSnapshotRequest.newBuilder().setSnapshotId(snapshot).build());
        controller.deleteVolume(Csi.DeleteVolumeRequest.newBuilder().setVolumeId(volume).build());
        // A caller's mistake: the error mapping and its log line.
        expectRefusal(() -> controller.createVolume(Csi.CreateVolumeRequest.getDefaultInstance()));
    }

    /**
     * The FlexVolume entry point, which kubelet starts once per call: its answers, and a mount and
     * an unmount through the node plugin that go as far as they can without root (the volume does
     * not exist, nothing is mounted).
     */
    private static void exerciseFlexVolume(Path socket, Path work) {
        Map<String, String> env = Map.of("CSI_ENDPOINT", "unix://" + socket);
        PrintStream nowhere = new PrintStream(OutputStream.nullOutputStream());
        String target = work.resolve("flexvolume-pod").toString();
        for (int round = 0; round < 5; round++) {
            FlexVolume.run(List.of("init"), env, nowhere);
            FlexVolume.run(List.of("getvolumename", "{}"), env, nowhere);
            FlexVolume.run(List.of("mount", target, "{\"volumeID\":\"vol-" + "0".repeat(32)
                    + "\",\"kubernetes.io/fsType\":\"ext4\",\"kubernetes.io/readwrite\":\"rw\"}"), env, nowhere);
            FlexVolume.run(List.of("unmount", target), env, nowhere);
        }
    }

    private static void expectRefusal(Runnable call) {
        try {
            call.run();
        } catch (StatusRuntimeException expected) {
            // the refusal is what is being trained
        }
    }

    private static void removeTree(Path root) {
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            // a scratch directory under the temp dir; nothing else is at stake
        }
    }
}
