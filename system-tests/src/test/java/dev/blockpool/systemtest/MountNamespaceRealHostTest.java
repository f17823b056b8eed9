package dev.blockpool.systemtest;

import static dev.blockpool.csi.CsiRequests.block;
import static dev.blockpool.csi.CsiRequests.mount;
import static org.assertj.core.api.Assertions.assertThat;

import csi.v1.Csi;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import dev.blockpool.common.HostRequirements;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.host.loops.LoopDevice;
import dev.blockpool.host.mounts.MountInfo;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A node plugin restarted in a new container: the plugin that stages and publishes runs in a
 * mount namespace of its own, with its own bind of the pool and a kubelet directory shared with
 * the host (Bidirectional propagation, as the DaemonSet mounts it), and is killed; a plugin in
 * another mount namespace then reports on, expands, unpublishes and unstages every volume the
 * first one left, filesystem and raw block, the read-only copy of a block volume included, and
 * releases every mount and loop device. The kernel now prints each device's image by a path of
 * the dead namespace, so only the image file's identity tells the new plugin whose it is.
 */
@NeedsRoot
class MountNamespaceRealHostTest {

    private static final long MIB = 1 << 20;
    private static final ProcessCommandRunner RUNNER = new ProcessCommandRunner();
    /**
     * The first plugin's jar when {@code -Dblockpool.firstPluginJar} names one (another build's
     * blockpool-csi.jar, its AOT cache beside it): the upgrade, where this build tears down what
     * that one staged. Else this build's, as a restarted container's.
     */
    private static final Optional<Path> PREVIOUS_RELEASE =
            Optional.ofNullable(System.getProperty("blockpool.firstPluginJar")).map(Path::of);

    private Path dir;
    private Path pool;
    private Path kubelet;
    private final List<AutoCloseable> closing = new ArrayList<>();

    @BeforeEach
    void setUp() throws IOException {
        HostRequirements.assumeRootWithLoopDevices();
        for (String tool : List.of("unshare", "mkfs.xfs", "xfs_growfs")) {
            HostRequirements.assumeCommand(tool);
        }
        dir = HostInspector.canonical(Files.createTempDirectory("blockpool-mntns-"));
        // The test's own tree: a private mount, so that nothing a plugin's namespace mounts below
        // it reaches any other namespace, whatever the host's propagation; then the kubelet
        // directory, shared, as kubelet's is.
        RUNNER.runChecked("mount", "--bind", dir.toString(), dir.toString());
        RUNNER.runChecked("mount", "--make-private", dir.toString());
        pool = Files.createDirectories(dir.resolve("pool"));
        kubelet = Files.createDirectories(dir.resolve("kubelet"));
        RUNNER.runChecked("mount", "--bind", kubelet.toString(), kubelet.toString());
        RUNNER.runChecked("mount", "--make-shared", kubelet.toString());
    }

    @AfterEach
    void tearDown() throws Exception {
        for (AutoCloseable c : closing.reversed()) {
            c.close();
        }
        if (dir != null) {
            // Releases whatever a failure left, the tree's own two mounts with it, then deletes the tree.
            new HostInspector(dir, pool).cleanUp();
        }
    }

    /** A node plugin as a container runs it: in a mount namespace of its own, the pool bound at {@code view}. */
    private DriverProcess pluginInItsOwnNamespace(String name, Path view, Optional<Path> jar) throws Exception {
        Files.createDirectories(view);
        Path home = Files.createDirectories(dir.resolve(name));
        DriverProcess plugin = new DriverProcess(home, view, "node", "mntns-node", "info");
        jar.ifPresent(plugin::jar);
        plugin.launchedBy(List.of(
                        "unshare",
                        "--mount",
                        "--propagation",
                        "unchanged",
                        "sh",
                        "-c",
                        "mount --bind \"$1\" \"$2\" && mount --make-private \"$2\" && shift 2 && exec \"$@\"",
                        "sh",
                        pool.toString(),
                        view.toString()))
                .start();
        closing.add(plugin);
        return plugin;
    }

    @Test
    void aPluginInANewMountNamespaceTearsDownWhatTheDeadOneStaged() throws Exception {
        DriverProcess controller = new DriverProcess(
                        Files.createDirectories(dir.resolve("controller")), pool, "controller", "controller", "info")
                .start();
        closing.add(controller);
        String filesystem = create(controller, "fs", 320 * MIB, mount("xfs", Mode.SINGLE_NODE_WRITER));
        String raw = create(controller, "raw", 64 * MIB, block(Mode.SINGLE_NODE_WRITER));

        Path fsStaging = Files.createDirectories(kubelet.resolve("plugins/fs/globalmount"));
        Path fsTarget = kubelet.resolve("pods/a/fs");
        Path fsReadOnly = kubelet.resolve("pods/b/fs");
        Path rawStaging = Files.createDirectories(kubelet.resolve("plugins/raw/staging"));
        Path rawTarget = kubelet.resolve("pods/a/raw");
        Path rawReadOnly = kubelet.resolve("pods/b/raw");
        Files.createDirectories(fsTarget.getParent());
        Files.createDirectories(fsReadOnly.getParent());

        DriverProcess first = pluginInItsOwnNamespace("plugin-1", dir.resolve("pool-view-1"), PREVIOUS_RELEASE);
        stage(first, filesystem, fsStaging, mount("xfs", Mode.SINGLE_NODE_WRITER));
        publish(first, filesystem, fsStaging, fsTarget, mount("xfs", Mode.SINGLE_NODE_WRITER), false);
        publish(first, filesystem, fsStaging, fsReadOnly, mount("xfs", Mode.SINGLE_NODE_WRITER), true);
        stage(first, raw, rawStaging, block(Mode.SINGLE_NODE_WRITER));
        publish(first, raw, rawStaging, rawTarget, block(Mode.SINGLE_NODE_WRITER), false);
        publish(first, raw, rawStaging, rawReadOnly, block(Mode.SINGLE_NODE_WRITER), true);
        // The pod's data, through the mount the first plugin made, seen here through propagation.
        Files.writeString(fsTarget.resolve("data"), "written before the restart");

        HostInspector host = new HostInspector(dir, pool);
        assertThat(host.loopsOf(raw))
                .as("the staged device and the read-only copy")
                .hasSize(2);
        first.kill();
        // What makes this a test: the kernel names the images by paths of the dead namespace.
        assertThat(host.loopsOf(filesystem))
                .singleElement()
                .extracting(LoopDevice::backingFile)
                .isNotEqualTo(host.volumeImage(filesystem));

        DriverProcess second = pluginInItsOwnNamespace("plugin-2", dir.resolve("pool-view-2"), Optional.empty());
        assertThat(stats(second, filesystem, fsTarget).getUsageList()).isNotEmpty();
        long grownFrom = stats(second, filesystem, fsTarget).getUsage(0).getTotal();
        assertThat(stats(second, filesystem, fsStaging).getUsageList()).isNotEmpty();
        assertThat(stats(second, raw, rawTarget).getUsage(0).getTotal()).isEqualTo(64 * MIB);
        for (Path path : List.of(fsTarget, fsReadOnly, fsStaging)) {
            assertThat(health(second, filesystem, path))
                    .as("health at %s", path)
                    .isEmpty();
        }
        assertThat(health(second, raw, rawReadOnly)).isEmpty();

        expand(controller, filesystem, 400 * MIB);
        assertThat(expand(second, filesystem, fsTarget)).isEqualTo(400 * MIB);
        assertThat(stats(second, filesystem, fsTarget).getUsage(0).getTotal()).isGreaterThan(grownFrom);
        expand(controller, raw, 96 * MIB);
        assertThat(expand(second, raw, rawTarget)).isEqualTo(96 * MIB);
        assertThat(stats(second, raw, rawTarget).getUsage(0).getTotal()).isEqualTo(96 * MIB);

        for (Path target : List.of(fsTarget, fsReadOnly)) {
            unpublish(second, filesystem, target);
        }
        for (Path target : List.of(rawTarget, rawReadOnly)) {
            unpublish(second, raw, target);
        }
        unstage(second, filesystem, fsStaging);
        unstage(second, raw, rawStaging);
        assertThat(host.poolLoops()).as("loop devices of the pool").isEmpty();
        assertThat(host.mountsUnder())
                .extracting(MountInfo::mountPoint)
                .as("mounts below the test's tree")
                .containsOnly(dir, kubelet);

        // The data is the pod's still, now through the new plugin's own mounts.
        stage(second, filesystem, fsStaging, mount("xfs", Mode.SINGLE_NODE_WRITER));
        publish(second, filesystem, fsStaging, fsTarget, mount("xfs", Mode.SINGLE_NODE_WRITER), false);
        assertThat(Files.readString(fsTarget.resolve("data"))).isEqualTo("written before the restart");
        unpublish(second, filesystem, fsTarget);
        unstage(second, filesystem, fsStaging);
        assertThat(host.poolLoops()).isEmpty();
    }

    private static String create(DriverProcess controller, String name, long bytes, Csi.VolumeCapability capability) {
        return controller
                .controller()
                .createVolume(Csi.CreateVolumeRequest.newBuilder()
                        .setName(name)
                        .setCapacityRange(Csi.CapacityRange.newBuilder().setRequiredBytes(bytes))
                        .addVolumeCapabilities(capability)
                        .build())
                .getVolume()
                .getVolumeId();
    }

    private static void expand(DriverProcess controller, String volumeId, long bytes) {
        controller
                .controller()
                .controllerExpandVolume(Csi.ControllerExpandVolumeRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .setCapacityRange(Csi.CapacityRange.newBuilder().setRequiredBytes(bytes))
                        .build());
    }

    private static long expand(DriverProcess node, String volumeId, Path path) {
        return node.node()
                .nodeExpandVolume(Csi.NodeExpandVolumeRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .setVolumePath(path.toString())
                        .build())
                .getCapacityBytes();
    }

    private static void stage(DriverProcess node, String volumeId, Path staging, Csi.VolumeCapability capability) {
        node.node()
                .nodeStageVolume(Csi.NodeStageVolumeRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .setStagingTargetPath(staging.toString())
                        .setVolumeCapability(capability)
                        .build());
    }

    private static void publish(
            DriverProcess node,
            String volumeId,
            Path staging,
            Path target,
            Csi.VolumeCapability capability,
            boolean readOnly) {
        node.node()
                .nodePublishVolume(Csi.NodePublishVolumeRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .setStagingTargetPath(staging.toString())
                        .setTargetPath(target.toString())
                        .setVolumeCapability(capability)
                        .setReadonly(readOnly)
                        .build());
    }

    private static void unpublish(DriverProcess node, String volumeId, Path target) {
        node.node()
                .nodeUnpublishVolume(Csi.NodeUnpublishVolumeRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .setTargetPath(target.toString())
                        .build());
    }

    private static void unstage(DriverProcess node, String volumeId, Path staging) {
        node.node()
                .nodeUnstageVolume(Csi.NodeUnstageVolumeRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .setStagingTargetPath(staging.toString())
                        .build());
    }

    private static Csi.NodeGetVolumeStatsResponse stats(DriverProcess node, String volumeId, Path path) {
        return node.node()
                .nodeGetVolumeStats(Csi.NodeGetVolumeStatsRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .setVolumePath(path.toString())
                        .build());
    }

    private static List<Csi.VolumeHealth.VolumeHealthEntry> health(DriverProcess node, String volumeId, Path path) {
        return node.node()
                .nodeGetVolumeHealth(Csi.NodeGetVolumeHealthRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .setVolumePublishPath(path.toString())
                        .build())
                .getVolumeHealth()
                .getHealthStatusesList();
    }
}
