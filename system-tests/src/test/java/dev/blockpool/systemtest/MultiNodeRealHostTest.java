package dev.blockpool.systemtest;

import static dev.blockpool.csi.CsiRequests.block;
import static dev.blockpool.csi.CsiRequests.mount;
import static dev.blockpool.csi.StatusAssertions.failure;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import csi.v1.Csi.CapacityRange;
import csi.v1.Csi.ControllerPublishVolumeRequest;
import csi.v1.Csi.ControllerUnpublishVolumeRequest;
import csi.v1.Csi.CreateSnapshotRequest;
import csi.v1.Csi.CreateVolumeRequest;
import csi.v1.Csi.DeleteSnapshotRequest;
import csi.v1.Csi.DeleteVolumeRequest;
import csi.v1.Csi.NodeGetInfoRequest;
import csi.v1.Csi.NodePublishVolumeRequest;
import csi.v1.Csi.NodeStageVolumeRequest;
import csi.v1.Csi.NodeUnpublishVolumeRequest;
import csi.v1.Csi.NodeUnstageVolumeRequest;
import csi.v1.Csi.ProbeRequest;
import csi.v1.Csi.ValidateVolumeCapabilitiesRequest;
import csi.v1.Csi.VolumeCapability;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import csi.v1.Csi.VolumeContentSource;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.systemtest.CallerModel.Kind;
import dev.blockpool.systemtest.CallerModel.Payload;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.extension.TestWatcher;

/**
 * Many nodes, one pool: a real GlusterFS volume on this host, mounted twice by FUSE as the pools
 * of two "nodes", with one controller (on the first mount) and a node plugin on each mount,
 * every one the packaged binary in its own process with its own socket. The flows are those of
 * docs/pool.md's shared pool: a single-writer volume handed from node to node with its data,
 * a read-only volume on both at once, snapshots without reflinks, a node plugin killed and
 * restarted, and a node that never comes back. Each flow tears down what it made and checks
 * that no mount or loop device of its volume is left; the end checks the whole run.
 *
 * <p>Skipped with the reason where /dev/fuse, loop devices or GlusterFS are missing. The result
 * line ({@code multinode: N passed, N failed, N skipped}) goes to
 * {@code target/system-tests-summary.txt}, which scripts/test.sh prints.
 */
@NeedsRoot
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class MultiNodeRealHostTest {

    private static final long MIB = 1 << 20;
    private static final Path TARGET = Path.of("target");
    private static final Duration SERVE_TIMEOUT = Duration.ofSeconds(30);

    @RegisterExtension
    final Results results = new Results();

    private Path dir;
    private GlusterVolume gluster;
    /** GlusterFS's own directories on the host before the test's glusterd started. */
    private GlusterVolume.HostDirectories glusterHostBefore;

    private DriverProcess controller;
    private Node nodeA;
    private Node nodeB;
    private long started;
    private Optional<String> unavailable;
    private final Random random = new Random(14);

    /** One node: its plugin, its mount of the pool, and its kubelet directory. */
    private record Node(String id, Path home, Path pool, DriverProcess plugin, HostInspector host) {
        Path staging(String volumeId) {
            return home.resolve("kubelet/plugins/staging").resolve(volumeId);
        }

        Path target(String volumeId) {
            return home.resolve("kubelet/pods").resolve(volumeId).resolve("volume");
        }

        Path image(String volumeId) {
            return host.volumeImage(volumeId);
        }
    }

    @BeforeAll
    void start() throws Exception {
        started = System.nanoTime();
        unavailable = GlusterVolume.unavailable();
        if (unavailable.isPresent()) {
            return; // each flow is skipped with the reason, so that every one counts as skipped
        }
        dir = Files.createTempDirectory("blockpool-multinode");
        Path mountA = dir.resolve("gluster/mnt-A");
        Path mountB = dir.resolve("gluster/mnt-B");
        glusterHostBefore = GlusterVolume.HostDirectories.now();
        gluster = GlusterVolume.start(dir.resolve("gluster"), List.of(mountA, mountB));
        controller = serving(new DriverProcess(
                Files.createDirectories(dir.resolve("controller")), mountA, "controller", "controller-1", "info"));
        nodeA = node("nodeA", mountA);
        nodeB = node("nodeB", mountB);
    }

    private Node node(String id, Path pool) throws Exception {
        Path home = Files.createDirectories(dir.resolve(id));
        Files.createDirectories(home.resolve("kubelet/plugins/staging"));
        DriverProcess plugin =
                serving(new DriverProcess(Files.createDirectories(home.resolve("driver")), pool, "node", id, "info"));
        return new Node(id, home, pool, plugin, new HostInspector(home, pool));
    }

    @BeforeEach
    void requireGluster() {
        assumeTrue(unavailable.isEmpty(), () -> "skipped: " + unavailable.orElseThrow());
    }

    @AfterAll
    void stop() throws Exception {
        if (dir == null) {
            results.write(unavailable.map(reason -> " (" + reason + ")").orElse(""));
            return;
        }
        List<String> left = new ArrayList<>();
        for (DriverProcess driver : new DriverProcess[] {
            controller, nodeA == null ? null : nodeA.plugin(), nodeB == null ? null : nodeB.plugin()
        }) {
            if (driver != null) {
                driver.close();
            }
        }
        for (Node node : new Node[] {nodeA, nodeB}) {
            if (node != null) {
                left.addAll(node.host().releaseMountsAndLoops());
            }
        }
        if (gluster != null) {
            gluster.close();
        }
        List<String> glusterLeft = glusterHostBefore == null
                ? List.of()
                : glusterHostBefore.changesIn(GlusterVolume.HostDirectories.now());
        HostInspector whole = new HostInspector(dir, dir);
        left.addAll(
                whole.mountsUnder().stream().map(m -> "mount " + m.mountPoint()).toList());
        List<String> cleanUp = whole.cleanUp();
        if (!left.isEmpty()) {
            left.addAll(cleanUp);
        }
        results.write(", " + Duration.ofNanos(System.nanoTime() - started).toSeconds() + " s");
        assertThat(left).as("mounts and loop devices the flows left behind").isEmpty();
        assertThat(glusterLeft)
                .as("what GlusterFS left in %s", GlusterVolume.HostDirectories.ROOTS)
                .isEmpty();
    }

    @Test
    @Order(1)
    void everyNodeRegistersInThePoolWhereTheControllerSeesIt() throws IOException {
        for (Node node : List.of(nodeA, nodeB)) {
            assertThat(node.plugin()
                            .node()
                            .nodeGetInfo(NodeGetInfoRequest.getDefaultInstance())
                            .getNodeId())
                    .isEqualTo(node.id());
            // written through the node's own mount, read through the controller's
            assertThat(Files.readString(controller.pool().resolve("nodes").resolve(node.id() + ".json")))
                    .contains("\"nodeId\" : \"" + node.id() + "\"");
        }
        String volumeId = createVolume("registered", mount(Mode.SINGLE_NODE_WRITER), 16 * MIB);
        StatusRuntimeException unknown = failure(
                () -> controllerPublish(volumeId, "nodeC", mount(Mode.SINGLE_NODE_WRITER), false),
                Status.Code.NOT_FOUND);
        assertThat(unknown.getStatus().getDescription()).contains("node \"nodeC\" is not registered with the pool");
        deleteVolume(volumeId);
    }

    @Test
    @Order(2)
    void aSingleWriterVolumeMovesToAnotherNodeWithItsData() throws IOException {
        VolumeCapability capability = mount(Mode.SINGLE_NODE_WRITER);
        String volumeId = createVolume("handover", capability, 64 * MIB);
        controllerPublish(volumeId, nodeA.id(), capability, false);
        Payload written = attachAndWrite(nodeA, volumeId, capability);

        StatusRuntimeException refused = failure(
                () -> controllerPublish(volumeId, nodeB.id(), capability, false), Status.Code.FAILED_PRECONDITION);
        assertThat(refused.getStatus().getDescription()).contains("already published to node nodeA");

        detachEverywhere(nodeA, volumeId);
        controllerPublish(volumeId, nodeB.id(), capability, false);
        stageAndPublish(nodeB, volumeId, capability, false);
        assertThat(PodData.verify(nodeB.target(volumeId), Kind.EXT4, Map.of("data", written)))
                .isEmpty();
        detachEverywhere(nodeB, volumeId);
        deleteVolume(volumeId);
    }

    @Test
    @Order(3)
    void aReadOnlyManyVolumeIsPublishedOnBothNodesAtOnce() throws IOException {
        VolumeCapability writer = mount(Mode.SINGLE_NODE_WRITER);
        VolumeCapability readers = mount(Mode.MULTI_NODE_READER_ONLY);
        String volumeId = createVolume("readers", List.of(writer, readers), 64 * MIB);
        controllerPublish(volumeId, nodeA.id(), writer, false);
        Payload written = attachAndWrite(nodeA, volumeId, writer);
        detachEverywhere(nodeA, volumeId);

        for (Node node : List.of(nodeA, nodeB)) {
            controllerPublish(volumeId, node.id(), readers, true);
            stageAndPublish(node, volumeId, readers, true);
        }
        for (Node node : List.of(nodeA, nodeB)) {
            assertThat(PodData.verify(node.target(volumeId), Kind.EXT4, Map.of("data", written)))
                    .isEmpty();
            assertThatThrownBy(() -> Files.writeString(node.target(volumeId).resolve("data"), "x"))
                    .as("a write on %s", node.id())
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("Read-only file system");
        }
        for (Node node : List.of(nodeA, nodeB)) {
            detachEverywhere(node, volumeId);
        }
        deleteVolume(volumeId);
    }

    @Test
    @Order(4)
    void multiNodeMultiWriterBlockVolumesOnlyWhereAdvertised() {
        String volumeId = createVolume("many-writers", block(Mode.SINGLE_NODE_WRITER), 16 * MIB);
        try {
            var answer = controller
                    .controller()
                    .validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest.newBuilder()
                            .setVolumeId(volumeId)
                            .addVolumeCapabilities(block(Mode.MULTI_NODE_MULTI_WRITER))
                            .build());
            assumeTrue(
                    answer.hasConfirmed(),
                    () -> "skipped: MULTI_NODE_MULTI_WRITER is not advertised (" + answer.getMessage() + ")");
        } finally {
            deleteVolume(volumeId);
        }
    }

    @Test
    @Order(5)
    void aSnapshotAndItsRestoreAreSparseCopiesOnAPoolWithoutReflinks() throws IOException {
        VolumeCapability capability = block(Mode.SINGLE_NODE_WRITER);
        String volumeId = createVolume("snapshot-source", capability, 64 * MIB);
        controllerPublish(volumeId, nodeA.id(), capability, false);
        stageAndPublish(nodeA, volumeId, capability, false);
        Payload written = PodData.writeDevice(nodeA.target(volumeId), 8 * MIB, randomBytes(MIB));
        detachEverywhere(nodeA, volumeId);

        String snapshotId = controller
                .controller()
                .createSnapshot(CreateSnapshotRequest.newBuilder()
                        .setName("snapshot")
                        .setSourceVolumeId(volumeId)
                        .build())
                .getSnapshot()
                .getSnapshotId();
        assertThat(Files.readString(controller.log()))
                .contains("created snapshot " + snapshotId)
                .contains("of volume " + volumeId + " by SPARSE_COPY");
        String restoredId = controller
                .controller()
                .createVolume(createRequest("restored", List.of(capability), 64 * MIB)
                        .setVolumeContentSource(VolumeContentSource.newBuilder()
                                .setSnapshot(VolumeContentSource.SnapshotSource.newBuilder()
                                        .setSnapshotId(snapshotId)))
                        .build())
                .getVolume()
                .getVolumeId();
        controllerPublish(restoredId, nodeB.id(), capability, false);
        stageAndPublish(nodeB, restoredId, capability, false);
        assertThat(PodData.verify(nodeB.target(restoredId), Kind.BLOCK, Map.of("data", written)))
                .isEmpty();
        detachEverywhere(nodeB, restoredId);

        deleteVolume(restoredId);
        controller
                .controller()
                .deleteSnapshot(DeleteSnapshotRequest.newBuilder()
                        .setSnapshotId(snapshotId)
                        .build());
        deleteVolume(volumeId);
    }

    @Test
    @Order(6)
    void aNodePluginKilledWhileItsVolumeIsPublishedCleansUpOnceRestarted() throws Exception {
        VolumeCapability capability = mount(Mode.SINGLE_NODE_WRITER);
        String volumeId = createVolume("killed-plugin", capability, 64 * MIB);
        controllerPublish(volumeId, nodeB.id(), capability, false);
        Payload written = attachAndWrite(nodeB, volumeId, capability);

        nodeB.plugin().kill();
        assertThat(nodeB.host().mountsAt(nodeB.target(volumeId)))
                .as("the pod's mount outlives the plugin")
                .hasSize(1);
        serving(nodeB.plugin());
        // the restarted plugin knows the volume from the pool and the mount table alone
        assertThat(PodData.verify(nodeB.target(volumeId), Kind.EXT4, Map.of("data", written)))
                .isEmpty();
        detachEverywhere(nodeB, volumeId);
        deleteVolume(volumeId);
    }

    /**
     * A node that dies for good: what it had mounted and attached dies with it (here the test
     * releases them, as the host's end would), and the operator's ControllerUnpublish of its
     * attachment (docs/pool.md) lets another node take the volume, with the data it had synced.
     */
    @Test
    @Order(7)
    void aNodeThatNeverComesBackGivesItsVolumeUpToControllerUnpublish() throws Exception {
        VolumeCapability capability = mount(Mode.SINGLE_NODE_WRITER);
        String volumeId = createVolume("dead-node", capability, 64 * MIB);
        controllerPublish(volumeId, nodeA.id(), capability, false);
        Payload written = attachAndWrite(nodeA, volumeId, capability);

        nodeA.plugin().kill();
        assertThat(nodeA.host().releaseMountsAndLoops()).isNotEmpty();
        failure(() -> controllerPublish(volumeId, nodeB.id(), capability, false), Status.Code.FAILED_PRECONDITION);

        controller
                .controller()
                .controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .setNodeId(nodeA.id())
                        .build());
        controllerPublish(volumeId, nodeB.id(), capability, false);
        stageAndPublish(nodeB, volumeId, capability, false);
        assertThat(PodData.verify(nodeB.target(volumeId), Kind.EXT4, Map.of("data", written)))
                .isEmpty();
        detachEverywhere(nodeB, volumeId);
        deleteVolume(volumeId);
        serving(nodeA.plugin()); // for the flows after this one
    }

    /** A second controller on the pool, on the other node's mount, stands by while the first acts. */
    @Test
    @Order(8)
    void aSecondControllerOnThePoolStandsBy() throws Exception {
        try (DriverProcess second = serving(new DriverProcess(
                Files.createDirectories(dir.resolve("controller-2")),
                nodeB.pool(),
                "controller",
                "controller-2",
                "info"))) {
            assertThat(second.identity()
                            .probe(ProbeRequest.getDefaultInstance())
                            .getReady()
                            .getValue())
                    .as("a standby is alive: its livenessprobe must not restart it")
                    .isTrue();
            StatusRuntimeException refused = failure(
                    () -> second.controller()
                            .createVolume(createRequest("second", List.of(mount(Mode.SINGLE_NODE_WRITER)), 16 * MIB)
                                    .build()),
                    Status.Code.FAILED_PRECONDITION);
            assertThat(refused.getStatus().getDescription())
                    .contains("another controller acts on the pool (pid "
                            + controller.handle().pid());
        }
    }

    // ---- the calls a CO makes ----

    private String createVolume(String name, VolumeCapability capability, long bytes) {
        return createVolume(name, List.of(capability), bytes);
    }

    private String createVolume(String name, List<VolumeCapability> capabilities, long bytes) {
        return controller
                .controller()
                .createVolume(createRequest(name, capabilities, bytes).build())
                .getVolume()
                .getVolumeId();
    }

    private static CreateVolumeRequest.Builder createRequest(
            String name, List<VolumeCapability> capabilities, long bytes) {
        return CreateVolumeRequest.newBuilder()
                .setName(name)
                .addAllVolumeCapabilities(capabilities)
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(bytes));
    }

    private void deleteVolume(String volumeId) {
        controller
                .controller()
                .deleteVolume(
                        DeleteVolumeRequest.newBuilder().setVolumeId(volumeId).build());
    }

    private Map<String, String> controllerPublish(
            String volumeId, String nodeId, VolumeCapability capability, boolean readonly) {
        return controller
                .controller()
                .controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .setNodeId(nodeId)
                        .setVolumeCapability(capability)
                        .setReadonly(readonly)
                        .build())
                .getPublishContextMap();
    }

    private void stageAndPublish(Node node, String volumeId, VolumeCapability capability, boolean readonly)
            throws IOException {
        Map<String, String> context = Map.of("readonly", Boolean.toString(readonly));
        node.plugin()
                .node()
                .nodeStageVolume(NodeStageVolumeRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .setStagingTargetPath(node.staging(volumeId).toString())
                        .setVolumeCapability(capability)
                        .putAllPublishContext(context)
                        .build());
        Files.createDirectories(node.target(volumeId).getParent());
        node.plugin()
                .node()
                .nodePublishVolume(NodePublishVolumeRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .setStagingTargetPath(node.staging(volumeId).toString())
                        .setTargetPath(node.target(volumeId).toString())
                        .setVolumeCapability(capability)
                        .setReadonly(readonly)
                        .putAllPublishContext(context)
                        .build());
    }

    /** Stages and publishes on the node (published to it already) and writes a file there, as its pod would. */
    private Payload attachAndWrite(Node node, String volumeId, VolumeCapability capability) throws IOException {
        stageAndPublish(node, volumeId, capability, false);
        return PodData.writeFile(node.target(volumeId), "data", randomBytes(MIB));
    }

    /** Unpublish, unstage, ControllerUnpublish; then nothing of the volume may be left on the node. */
    private void detachEverywhere(Node node, String volumeId) {
        node.plugin()
                .node()
                .nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .setTargetPath(node.target(volumeId).toString())
                        .build());
        node.plugin()
                .node()
                .nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .setStagingTargetPath(node.staging(volumeId).toString())
                        .build());
        controller
                .controller()
                .controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .setNodeId(node.id())
                        .build());
        assertThat(node.host().mountsAt(node.target(volumeId)))
                .as("mounts at the target")
                .isEmpty();
        assertThat(node.host().mountsAt(node.staging(volumeId)))
                .as("mounts at the staging path")
                .isEmpty();
        assertThat(node.host().loopsOf(volumeId))
                .as("loop devices of %s on %s", volumeId, node.id())
                .isEmpty();
    }

    private byte[] randomBytes(long length) {
        byte[] bytes = new byte[(int) length];
        random.nextBytes(bytes);
        return bytes;
    }

    /** Starts the driver (again), and waits until it answers on its socket; a wait, not a judgement of speed. */
    private static DriverProcess serving(DriverProcess driver) throws Exception {
        driver.start();
        long deadline = System.nanoTime() + SERVE_TIMEOUT.toNanos();
        while (true) {
            try {
                driver.identity().probe(ProbeRequest.getDefaultInstance());
                return driver;
            } catch (StatusRuntimeException e) {
                if (e.getStatus().getCode() != Status.Code.UNAVAILABLE || System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(50);
            }
        }
    }

    /** Counts the flows' results for the summary line test.sh prints. */
    static final class Results implements TestWatcher {
        private final AtomicInteger passed = new AtomicInteger();
        private final AtomicInteger failed = new AtomicInteger();
        private final AtomicInteger skipped = new AtomicInteger();

        @Override
        public void testSuccessful(ExtensionContext context) {
            passed.incrementAndGet();
        }

        @Override
        public void testFailed(ExtensionContext context, Throwable cause) {
            failed.incrementAndGet();
        }

        @Override
        public void testAborted(ExtensionContext context, Throwable cause) {
            skipped.incrementAndGet();
        }

        /** The summary line, ending with {@code detail} (how long the run took, or why it was skipped). */
        void write(String detail) throws IOException {
            String line = "multinode: %d passed, %d failed, %d skipped%s"
                    .formatted(passed.get(), failed.get(), skipped.get(), detail);
            System.out.println(line);
            Files.createDirectories(TARGET);
            Files.writeString(
                    TARGET.resolve("system-tests-summary.txt"),
                    line + "\n",
                    StandardOpenOption.CREATE,
                    StandardOpenOption.APPEND);
        }
    }
}
