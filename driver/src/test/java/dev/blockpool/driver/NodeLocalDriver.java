package dev.blockpool.driver;

import static org.assertj.core.api.Assertions.assertThat;

import csi.v1.ControllerGrpc;
import csi.v1.Csi;
import csi.v1.Csi.VolumeCapability;
import csi.v1.GroupControllerGrpc;
import csi.v1.NodeGrpc;
import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.Endpoint;
import dev.blockpool.common.HostRequirements;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.csi.CsiRequests;
import dev.blockpool.csi.PoolScope;
import dev.blockpool.csi.UnixSocketChannels;
import dev.blockpool.pool.CapacityPolicy;
import dev.blockpool.pool.ReconcileSteps;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * A driver as the base deploys it on every node (--mode=all --pool-scope=node), started in this
 * process on a pool in a temporary directory of its own, and a client of it. {@link #close}
 * stops it and removes the directory, with whatever a failed test left there: file systems
 * thawed, unmounted, loop devices detached. It touches nothing outside that directory.
 */
final class NodeLocalDriver implements AutoCloseable {

    static final CommandRunner RUNNER = new ProcessCommandRunner();

    private final Path dir;
    private Driver.Running driver;
    private EventLoopGroup clientLoop;
    private ManagedChannel channel;

    private NodeLocalDriver(Path dir) {
        this.dir = dir;
    }

    /**
     * Started on a new directory named {@code prefix}...; closed again if it cannot start. The
     * test is skipped where the host lacks root, loop devices or mkfs.ext4.
     */
    static NodeLocalDriver start(String prefix, String nodeId) throws IOException {
        return start(prefix, nodeId, CapacityPolicy.DEFAULT, 0);
    }

    /**
     * {@link #start(String, String)}, its pool promising what {@code policy} allows on an ext4
     * filesystem of {@code poolBytes} of its own (in the test's directory), or in the directory
     * when 0.
     */
    static NodeLocalDriver start(String prefix, String nodeId, CapacityPolicy policy, long poolBytes)
            throws IOException {
        HostRequirements.assumeRootWithLoopDevices();
        HostRequirements.assumeCommand("mkfs.ext4");
        NodeLocalDriver started = new NodeLocalDriver(Files.createTempDirectory(prefix));
        try {
            if (poolBytes > 0) {
                started.mountPoolFilesystem(poolBytes);
            }
            started.start(nodeId, policy);
            return started;
        } catch (IOException | RuntimeException e) {
            started.close();
            throw e;
        }
    }

    private void mountPoolFilesystem(long bytes) throws IOException {
        Path image = dir.resolve("pool-filesystem.img");
        RUNNER.runChecked("truncate", "--size", Long.toString(bytes), image.toString());
        RUNNER.runChecked("mkfs.ext4", "-q", "-F", image.toString());
        Files.createDirectories(pool());
        RUNNER.runChecked("mount", "-o", "loop", image.toString(), pool().toString());
    }

    private void start(String nodeId, CapacityPolicy policy) throws IOException {
        Endpoint socket = Endpoint.parse(dir.resolve("csi.sock").toString());
        driver = new Driver(
                        new DriverConfig(
                                socket,
                                nodeId,
                                "blockpool.csi.dev",
                                pool(),
                                Mode.ALL,
                                8,
                                PoolScope.Kind.NODE,
                                Optional.empty(),
                                policy,
                                Optional.empty()),
                        "test",
                        new Driver.Background(Duration.ofDays(1), ReconcileSteps.ALL))
                .start();
        clientLoop = UnixSocketChannels.clientLoop();
        channel = UnixSocketChannels.channel(socket.socketPath(), clientLoop);
    }

    /** The test's directory. */
    Path dir() {
        return dir;
    }

    /** The driver's pool directory. */
    Path pool() {
        return dir.resolve("pool");
    }

    ManagedChannel channel() {
        return channel;
    }

    ControllerGrpc.ControllerBlockingStub controller() {
        return ControllerGrpc.newBlockingStub(channel);
    }

    GroupControllerGrpc.GroupControllerBlockingStub groupController() {
        return GroupControllerGrpc.newBlockingStub(channel);
    }

    NodeGrpc.NodeBlockingStub node() {
        return NodeGrpc.newBlockingStub(channel);
    }

    /** A volume made through the controller, as external-provisioner makes one for a claim; its ID. */
    String createVolume(String name, long bytes, VolumeCapability capability) {
        return controller()
                .createVolume(CsiRequests.createVolume(name, bytes, capability).build())
                .getVolume()
                .getVolumeId();
    }

    /** The volume staged at a staging path of its own in the test's directory, as kubelet stages it; that path. */
    Path stage(String volumeId, VolumeCapability capability) throws IOException {
        Path staging = Files.createDirectories(staging(volumeId));
        node().nodeStageVolume(Csi.NodeStageVolumeRequest.newBuilder()
                .setVolumeId(volumeId)
                .setStagingTargetPath(staging.toString())
                .setVolumeCapability(capability)
                .build());
        return staging;
    }

    /** Where {@link #stage} stages the volume. */
    Path staging(String volumeId) {
        return dir.resolve("kubelet/staging/" + volumeId);
    }

    /**
     * The staged volume published for the pod {@code pod} as kubelet publishes it, at
     * {@code kubelet/pods/<pod>/mount} in the test's directory; that path.
     */
    Path publish(String volumeId, VolumeCapability capability, String pod) throws IOException {
        Path target =
                Files.createDirectories(dir.resolve("kubelet/pods/" + pod)).resolve("mount");
        node().nodePublishVolume(Csi.NodePublishVolumeRequest.newBuilder()
                .setVolumeId(volumeId)
                .setStagingTargetPath(staging(volumeId).toString())
                .setTargetPath(target.toString())
                .setVolumeCapability(capability)
                .build());
        return target;
    }

    /** The volume unstaged from where {@link #stage} staged it. */
    void unstage(String volumeId) {
        node().nodeUnstageVolume(Csi.NodeUnstageVolumeRequest.newBuilder()
                .setVolumeId(volumeId)
                .setStagingTargetPath(staging(volumeId).toString())
                .build());
    }

    @Override
    public void close() throws IOException {
        if (channel != null) {
            channel.shutdownNow();
            clientLoop.shutdownGracefully();
        }
        if (driver != null) {
            driver.stop(Duration.ofSeconds(10));
        }
        cleanUp();
    }

    /**
     * Whatever a failed test left: thawed, unmounted and detached, then removed. A pool on a
     * filesystem of its own is unmounted last, once no loop device holds an image in it.
     */
    private void cleanUp() throws IOException {
        List<String> mounts = mountPointsUnder(dir);
        for (String mountPoint : mounts) {
            RUNNER.run("fsfreeze", "--unfreeze", mountPoint);
        }
        String poolMount = dir.toRealPath().resolve("pool").toString();
        for (String mountPoint : mounts) {
            if (!mountPoint.equals(poolMount)) {
                unmount(mountPoint);
            }
        }
        detachLoopsUnder(dir);
        if (mounts.contains(poolMount)) {
            unmount(poolMount);
            detachLoopsUnder(dir);
        }
        assertThat(mountPointsUnder(dir)).as("mounts left").isEmpty();
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    private static void unmount(String mountPoint) {
        if (!RUNNER.run("umount", mountPoint).ok()) {
            RUNNER.run("umount", "--lazy", mountPoint);
        }
    }

    private static void detachLoopsUnder(Path dir) {
        String loops = RUNNER.run("losetup", "--noheadings", "--output", "NAME,BACK-FILE")
                .stdout();
        for (String line : loops.lines().toList()) {
            String[] fields = line.trim().split("\\s+", 2);
            if (fields.length == 2 && fields[1].startsWith(dir.toString() + "/")) {
                RUNNER.run("losetup", "--detach", fields[0]);
            }
        }
    }

    private static List<String> mountPointsUnder(Path dir) throws IOException {
        String prefix = dir.toRealPath() + "/";
        return Files.readAllLines(Path.of("/proc/self/mountinfo")).stream()
                .map(line -> line.split(" ")[4])
                .filter(mountPoint -> mountPoint.startsWith(prefix))
                .sorted(Comparator.reverseOrder())
                .toList();
    }
}
