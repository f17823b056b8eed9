package dev.blockpool.driver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import csi.v1.ControllerGrpc;
import csi.v1.Csi;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import csi.v1.GroupControllerGrpc;
import csi.v1.IdentityGrpc;
import csi.v1.NodeGrpc;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.common.SilentFuseMount;
import dev.blockpool.csi.CsiRequests;
import dev.blockpool.host.mounts.ProcMountTable;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Every call on a pool whose filesystem stops answering, as an NFS pool whose server died (here a
 * FUSE mount over the pool whose daemon reads nothing): answered before the caller's deadline with
 * a code kubelet and the sidecars retry, Probe answering all the while, and once the pool answers
 * again the same call succeeds, without a restart.
 */
@NeedsRoot
class PoolThatStopsAnsweringRealHostTest {

    /** A sidecar's deadline is 10 s or more, kubelet's 2 min; a short one keeps the test short. */
    private static final long DEADLINE_SECONDS = 4;

    private static final long MIB = 1 << 20;
    private static final String NODE = "node-1";

    @TempDir
    Path dir;

    /** What a call needs done before it: each step needs those before it. */
    enum Before {
        A_VOLUME,
        A_SNAPSHOT,
        A_GROUP_SNAPSHOT,
        ATTACHED,
        STAGED,
        PUBLISHED,
        EXPANDED
    }

    /** The calls that need nothing of the pool, only of the node's kernel: answered while the pool does not. */
    private static final Set<Rpc> WITHOUT_THE_POOL = EnumSet.of(Rpc.NODE_UNSTAGE_VOLUME, Rpc.NODE_UNPUBLISH_VOLUME);
    /**
     * Calls whose answer depends on the host, asked once before the pool stops answering: that
     * answer is the one due once it answers again. NodeExpandVolume grows an ext4 online only
     * with CAP_SYS_RESOURCE, else answers FAILED_PRECONDITION (it grows at the next stage).
     */
    private static final Set<Rpc> AS_ON_A_HEALTHY_POOL = EnumSet.of(Rpc.NODE_EXPAND_VOLUME);

    enum Rpc {
        CREATE_VOLUME(
                Before.A_VOLUME,
                t -> t.controller().createVolume(volumeRequest("another").build())),
        DELETE_VOLUME(
                Before.A_VOLUME,
                t -> t.controller()
                        .deleteVolume(Csi.DeleteVolumeRequest.newBuilder()
                                .setVolumeId(t.volume)
                                .build())),
        CONTROLLER_PUBLISH_VOLUME(Before.A_VOLUME, t -> t.attach(t.controller())),
        CONTROLLER_UNPUBLISH_VOLUME(
                Before.ATTACHED,
                t -> t.controller()
                        .controllerUnpublishVolume(Csi.ControllerUnpublishVolumeRequest.newBuilder()
                                .setVolumeId(t.volume)
                                .setNodeId(NODE)
                                .build())),
        VALIDATE_VOLUME_CAPABILITIES(
                Before.A_VOLUME,
                t -> t.controller()
                        .validateVolumeCapabilities(Csi.ValidateVolumeCapabilitiesRequest.newBuilder()
                                .setVolumeId(t.volume)
                                .addVolumeCapabilities(CsiRequests.mount(Mode.SINGLE_NODE_WRITER))
                                .build())),
        LIST_VOLUMES(Before.A_VOLUME, t -> t.controller().listVolumes(Csi.ListVolumesRequest.getDefaultInstance())),
        GET_CAPACITY(Before.A_VOLUME, t -> t.controller().getCapacity(Csi.GetCapacityRequest.getDefaultInstance())),
        CONTROLLER_GET_VOLUME(
                Before.A_VOLUME,
                t -> t.controller()
                        .controllerGetVolume(Csi.ControllerGetVolumeRequest.newBuilder()
                                .setVolumeId(t.volume)
                                .build())),
        CONTROLLER_EXPAND_VOLUME(Before.A_VOLUME, t -> t.expand(t.controller())),
        CONTROLLER_MODIFY_VOLUME(
                Before.A_VOLUME,
                t -> t.controller()
                        .controllerModifyVolume(Csi.ControllerModifyVolumeRequest.newBuilder()
                                .setVolumeId(t.volume)
                                .putMutableParams("allocation", "preallocated")
                                .build())),
        CREATE_SNAPSHOT(Before.A_VOLUME, t -> t.snapshot(t.controller())),
        DELETE_SNAPSHOT(
                Before.A_SNAPSHOT,
                t -> t.controller()
                        .deleteSnapshot(Csi.DeleteSnapshotRequest.newBuilder()
                                .setSnapshotId(t.snapshot)
                                .build())),
        LIST_SNAPSHOTS(
                Before.A_SNAPSHOT, t -> t.controller().listSnapshots(Csi.ListSnapshotsRequest.getDefaultInstance())),
        GET_SNAPSHOT(
                Before.A_SNAPSHOT,
                t -> t.controller()
                        .getSnapshot(Csi.GetSnapshotRequest.newBuilder()
                                .setSnapshotId(t.snapshot)
                                .build())),
        CREATE_VOLUME_GROUP_SNAPSHOT(Before.A_VOLUME, t -> t.groupSnapshot(t.group())),
        DELETE_VOLUME_GROUP_SNAPSHOT(
                Before.A_GROUP_SNAPSHOT,
                t -> t.group()
                        .deleteVolumeGroupSnapshot(Csi.DeleteVolumeGroupSnapshotRequest.newBuilder()
                                .setGroupSnapshotId(t.groupSnapshot.getGroupSnapshotId())
                                .addAllSnapshotIds(t.memberIds())
                                .build())),
        GET_VOLUME_GROUP_SNAPSHOT(
                Before.A_GROUP_SNAPSHOT,
                t -> t.group()
                        .getVolumeGroupSnapshot(Csi.GetVolumeGroupSnapshotRequest.newBuilder()
                                .setGroupSnapshotId(t.groupSnapshot.getGroupSnapshotId())
                                .addAllSnapshotIds(t.memberIds())
                                .build())),
        NODE_STAGE_VOLUME(Before.ATTACHED, t -> t.stage(t.node())),
        NODE_UNSTAGE_VOLUME(
                Before.STAGED,
                t -> t.node()
                        .nodeUnstageVolume(Csi.NodeUnstageVolumeRequest.newBuilder()
                                .setVolumeId(t.volume)
                                .setStagingTargetPath(t.staging().toString())
                                .build())),
        NODE_PUBLISH_VOLUME(Before.STAGED, t -> t.publish(t.node())),
        NODE_UNPUBLISH_VOLUME(
                Before.PUBLISHED,
                t -> t.node()
                        .nodeUnpublishVolume(Csi.NodeUnpublishVolumeRequest.newBuilder()
                                .setVolumeId(t.volume)
                                .setTargetPath(t.target().toString())
                                .build())),
        NODE_EXPAND_VOLUME(
                Before.EXPANDED,
                t -> t.node()
                        .nodeExpandVolume(Csi.NodeExpandVolumeRequest.newBuilder()
                                .setVolumeId(t.volume)
                                .setVolumePath(t.target().toString())
                                .setStagingTargetPath(t.staging().toString())
                                .setCapacityRange(Csi.CapacityRange.newBuilder().setRequiredBytes(64 * MIB))
                                .build()));

        final Before before;
        final Function<PoolThatStopsAnsweringRealHostTest, Object> call;

        Rpc(Before before, Function<PoolThatStopsAnsweringRealHostTest, Object> call) {
            this.before = before;
            this.call = call;
        }
    }

    private ManagedChannel channel;
    private String volume;
    private Map<String, String> publishContext = Map.of();
    private String snapshot;
    private Csi.VolumeGroupSnapshot groupSnapshot;
    /** The deadline of the calls made from now on: none while preparing, the short one while the pool is silent. */
    private boolean withDeadline;

    @ParameterizedTest
    @EnumSource(Rpc.class)
    void aCallOnAPoolThatStopsAnsweringIsAnsweredInTimeAndSucceedsOnceItAnswers(Rpc rpc) throws Exception {
        assumeTrue(SilentFuseMount.available(), "needs root and /dev/fuse");
        Path pool = dir.resolve("pool");
        try (DriversOnOnePool drivers = new DriversOnOnePool(dir)) {
            drivers.start("driver", NODE, dev.blockpool.driver.Mode.ALL);
            channel = drivers.channel("driver");
            try {
                prepare(rpc.before);
                Status.Code healthy = AS_ON_A_HEALTHY_POOL.contains(rpc) ? codeOf(rpc) : Status.Code.OK;
                try (SilentFuseMount _ = SilentFuseMount.on(pool)) {
                    withDeadline = true;
                    Status.Code whilePoolSilent = codeOf(rpc);
                    if (WITHOUT_THE_POOL.contains(rpc)) {
                        assertThat(whilePoolSilent).isEqualTo(Status.Code.OK);
                    } else {
                        assertThat(whilePoolSilent)
                                .as("answered by the driver before the caller's deadline, a code to retry")
                                .isEqualTo(Status.Code.UNAVAILABLE);
                    }
                    assertThat(IdentityGrpc.newBlockingStub(channel)
                                    .withDeadlineAfter(2, TimeUnit.SECONDS)
                                    .probe(Csi.ProbeRequest.getDefaultInstance())
                                    .getReady()
                                    .getValue())
                            .as("Probe, which livenessprobe asks, answers and keeps the driver ready")
                            .isTrue();
                } // the daemon is gone: what waited on the pool fails, and the pool is the directory again
                withDeadline = false;
                assertThat(succeedsOnceRetried(rpc))
                        .as("the same call once the pool answers again")
                        .isEqualTo(healthy);
            } finally {
                withDeadline = false;
                tearDown();
            }
        } finally {
            releaseEverythingUnder(dir);
        }
    }

    /** The call's answer, retried as a sidecar does while it is one to retry (the volume's lock still held). */
    private Status.Code succeedsOnceRetried(Rpc rpc) throws InterruptedException {
        Status.Code code = codeOf(rpc);
        for (int i = 0; i < 100 && (code == Status.Code.ABORTED || code == Status.Code.UNAVAILABLE); i++) {
            Thread.sleep(100);
            code = codeOf(rpc);
        }
        return code;
    }

    private Status.Code codeOf(Rpc rpc) {
        try {
            rpc.call.apply(this);
            return Status.Code.OK;
        } catch (StatusRuntimeException e) {
            return e.getStatus().getCode();
        }
    }

    private void prepare(Before before) {
        volume = controller()
                .createVolume(volumeRequest("data").build())
                .getVolume()
                .getVolumeId();
        switch (before) {
            case A_SNAPSHOT -> snapshot = snapshot(controller()).getSnapshot().getSnapshotId();
            case A_GROUP_SNAPSHOT -> groupSnapshot = groupSnapshot(group()).getGroupSnapshot();
            case ATTACHED -> attach(controller());
            case STAGED -> {
                attach(controller());
                stage(node());
            }
            case PUBLISHED -> {
                attach(controller());
                stage(node());
                publish(node());
            }
            case EXPANDED -> {
                attach(controller());
                stage(node());
                publish(node());
                expand(controller());
            }
            case A_VOLUME -> {}
        }
    }

    /** Unpublishes and unstages what the test made, as kubelet would; the rest goes with the driver's pool. */
    private void tearDown() {
        try {
            if (Files.exists(target())) {
                node().nodeUnpublishVolume(Csi.NodeUnpublishVolumeRequest.newBuilder()
                        .setVolumeId(volume)
                        .setTargetPath(target().toString())
                        .build());
            }
            if (Files.exists(staging())) {
                node().nodeUnstageVolume(Csi.NodeUnstageVolumeRequest.newBuilder()
                        .setVolumeId(volume)
                        .setStagingTargetPath(staging().toString())
                        .build());
            }
        } catch (StatusRuntimeException e) {
            // releaseEverythingUnder is the net
        }
    }

    private static Csi.CreateVolumeRequest.Builder volumeRequest(String name) {
        return CsiRequests.createVolume(name, 32 * MIB, CsiRequests.mount(Mode.SINGLE_NODE_WRITER));
    }

    private Object attach(ControllerGrpc.ControllerBlockingStub controller) {
        Csi.ControllerPublishVolumeResponse attached =
                controller.controllerPublishVolume(Csi.ControllerPublishVolumeRequest.newBuilder()
                        .setVolumeId(volume)
                        .setNodeId(NODE)
                        .setVolumeCapability(CsiRequests.mount(Mode.SINGLE_NODE_WRITER))
                        .build());
        publishContext = attached.getPublishContextMap();
        return attached;
    }

    private Object expand(ControllerGrpc.ControllerBlockingStub controller) {
        return controller.controllerExpandVolume(Csi.ControllerExpandVolumeRequest.newBuilder()
                .setVolumeId(volume)
                .setCapacityRange(Csi.CapacityRange.newBuilder().setRequiredBytes(64 * MIB))
                .build());
    }

    private Csi.CreateSnapshotResponse snapshot(ControllerGrpc.ControllerBlockingStub controller) {
        return controller.createSnapshot(Csi.CreateSnapshotRequest.newBuilder()
                .setName("snap")
                .setSourceVolumeId(volume)
                .build());
    }

    private Csi.CreateVolumeGroupSnapshotResponse groupSnapshot(GroupControllerGrpc.GroupControllerBlockingStub group) {
        return group.createVolumeGroupSnapshot(Csi.CreateVolumeGroupSnapshotRequest.newBuilder()
                .setName("group")
                .addSourceVolumeIds(volume)
                .build());
    }

    private List<String> memberIds() {
        return groupSnapshot.getSnapshotsList().stream()
                .map(Csi.Snapshot::getSnapshotId)
                .toList();
    }

    private Object stage(NodeGrpc.NodeBlockingStub node) {
        return node.nodeStageVolume(Csi.NodeStageVolumeRequest.newBuilder()
                .setVolumeId(volume)
                .setStagingTargetPath(staging().toString())
                .setVolumeCapability(CsiRequests.mount(Mode.SINGLE_NODE_WRITER))
                .putAllPublishContext(publishContext)
                .build());
    }

    private Object publish(NodeGrpc.NodeBlockingStub node) {
        return node.nodePublishVolume(Csi.NodePublishVolumeRequest.newBuilder()
                .setVolumeId(volume)
                .setStagingTargetPath(staging().toString())
                .setTargetPath(target().toString())
                .setVolumeCapability(CsiRequests.mount(Mode.SINGLE_NODE_WRITER))
                .putAllPublishContext(publishContext)
                .build());
    }

    private Path staging() {
        return dir.resolve("kubelet/staging");
    }

    private Path target() {
        return dir.resolve("kubelet/pods/target");
    }

    private ControllerGrpc.ControllerBlockingStub controller() {
        ControllerGrpc.ControllerBlockingStub stub = ControllerGrpc.newBlockingStub(channel);
        return withDeadline ? stub.withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS) : stub;
    }

    private GroupControllerGrpc.GroupControllerBlockingStub group() {
        GroupControllerGrpc.GroupControllerBlockingStub stub = GroupControllerGrpc.newBlockingStub(channel);
        return withDeadline ? stub.withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS) : stub;
    }

    private NodeGrpc.NodeBlockingStub node() {
        NodeGrpc.NodeBlockingStub stub = NodeGrpc.newBlockingStub(channel);
        return withDeadline ? stub.withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS) : stub;
    }

    /** What a failed test may have left: mounts below {@code dir} (deepest first), then its loop devices. */
    private static void releaseEverythingUnder(Path dir) throws Exception {
        ProcessCommandRunner runner = new ProcessCommandRunner();
        Path root = dir.toRealPath();
        List<Path> mounts = new ArrayList<>(new ProcMountTable()
                .mounts().stream()
                        .map(m -> m.mountPoint())
                        .filter(p -> p.startsWith(root))
                        .toList());
        mounts.sort(Comparator.comparingInt(Path::getNameCount).reversed());
        for (Path mount : mounts) {
            runner.run("umount", "--lazy", mount.toString());
        }
        for (String line : runner.run("losetup", "--noheadings", "--output", "NAME,BACK-FILE")
                .stdout()
                .lines()
                .toList()) {
            String[] fields = line.trim().split("\\s+", 2);
            if (fields.length == 2 && fields[1].startsWith(root.toString())) {
                runner.run("losetup", "--detach", fields[0]);
            }
        }
    }
}
