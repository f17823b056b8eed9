package dev.blockpool.controller;

import csi.v1.ControllerGrpc;
import csi.v1.Csi.CreateVolumeRequest;
import csi.v1.Csi.VolumeCapability;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import csi.v1.Csi.VolumeContentSource;
import csi.v1.GroupControllerGrpc;
import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.OperationLocks;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.csi.CsiRequests;
import dev.blockpool.csi.InProcessCsi;
import dev.blockpool.csi.PoolScope;
import dev.blockpool.pool.MemberFreeze;
import dev.blockpool.pool.NodeHolds;
import dev.blockpool.pool.NodeIoLimits;
import dev.blockpool.pool.Pool;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;

/**
 * A {@link ControllerService} on a pool directory, served in-process through the same status
 * interceptor as the driver, so tests see the gRPC codes a CO sees. {@link #restart()} drops
 * everything held in memory (pool, locks, server) and opens the same directory again, as a
 * restarted driver would.
 */
final class ControllerHarness implements AutoCloseable {

    static final long MIB = 1 << 20;

    private final Path poolDir;
    private final CommandRunner commands;
    private final PoolScope scope;
    private final NodeHolds holds;
    private final MemberFreeze freeze;
    private final OtherNodes otherNodes;
    private final NodeIoLimits nodeIoLimits;
    private ControllerService service;
    private final Duration waitWithoutDeadline;
    private Pool pool;
    private InProcessCsi served;
    private ControllerGrpc.ControllerBlockingStub stub;
    private GroupControllerGrpc.GroupControllerBlockingStub groupStub;

    ControllerHarness(Path poolDir) {
        this(poolDir, new ProcessCommandRunner());
    }

    ControllerHarness(Path poolDir, CommandRunner commands) {
        this(
                poolDir,
                commands,
                PoolScope.shared(),
                NodeHolds.NONE,
                MemberFreeze.NONE,
                OtherNodes.NONE,
                NodeIoLimits.NONE,
                Duration.ZERO);
    }

    ControllerHarness(Path poolDir, PoolScope scope) {
        this(poolDir, scope, NodeHolds.NONE);
    }

    /** {@code holds}: what holds a volume on the node, as the driver that serves the node too would say. */
    ControllerHarness(Path poolDir, PoolScope scope, NodeHolds holds) {
        this(
                poolDir,
                new ProcessCommandRunner(),
                scope,
                holds,
                MemberFreeze.NONE,
                OtherNodes.NONE,
                NodeIoLimits.NONE,
                Duration.ZERO);
    }

    /** {@code freeze}: how a group's members are held still, as the driver that serves the node too would. */
    ControllerHarness(Path poolDir, MemberFreeze freeze) {
        this(
                poolDir,
                new ProcessCommandRunner(),
                PoolScope.shared(),
                NodeHolds.NONE,
                freeze,
                OtherNodes.NONE,
                NodeIoLimits.NONE,
                Duration.ZERO);
    }

    /**
     * {@code otherNodes}: the other nodes' pools; {@code waitWithoutDeadline}: how long a
     * CreateVolume waits for a pull from one of them.
     */
    ControllerHarness(Path poolDir, PoolScope scope, OtherNodes otherNodes, Duration waitWithoutDeadline) {
        this(
                poolDir,
                new ProcessCommandRunner(),
                scope,
                NodeHolds.NONE,
                MemberFreeze.NONE,
                otherNodes,
                NodeIoLimits.NONE,
                waitWithoutDeadline);
    }

    /** {@code ioLimits}: what applies changed I/O limits on the node, as the driver that serves the node too would. */
    ControllerHarness(Path poolDir, PoolScope scope, NodeIoLimits ioLimits) {
        this(
                poolDir,
                new ProcessCommandRunner(),
                scope,
                NodeHolds.NONE,
                MemberFreeze.NONE,
                OtherNodes.NONE,
                ioLimits,
                Duration.ZERO);
    }

    private ControllerHarness(
            Path poolDir,
            CommandRunner commands,
            PoolScope scope,
            NodeHolds holds,
            MemberFreeze freeze,
            OtherNodes otherNodes,
            NodeIoLimits nodeIoLimits,
            Duration waitWithoutDeadline) {
        this.poolDir = poolDir;
        this.commands = commands;
        this.scope = scope;
        this.holds = holds;
        this.freeze = freeze;
        this.otherNodes = otherNodes;
        this.nodeIoLimits = nodeIoLimits;
        this.waitWithoutDeadline = waitWithoutDeadline;
        start();
    }

    private void start() {
        // settle time zero: at start-up everything unfinished is treated as left by a crash
        pool = Pool.open(poolDir, commands, Clock.systemUTC(), Duration.ZERO);
        OperationLocks locks = new OperationLocks();
        service = new ControllerService(pool, locks, scope, holds, otherNodes, nodeIoLimits, waitWithoutDeadline);
        served = InProcessCsi.serve(service, new GroupControllerService(pool, locks, freeze, scope));
        pool.reconcile(locks); // as the driver does once it serves
        stub = ControllerGrpc.newBlockingStub(served.channel());
        groupStub = GroupControllerGrpc.newBlockingStub(served.channel());
    }

    void restart() {
        close();
        start();
    }

    /** The service itself, for what the driver calls on it beside gRPC. */
    ControllerService service() {
        return service;
    }

    ControllerGrpc.ControllerBlockingStub stub() {
        return stub;
    }

    GroupControllerGrpc.GroupControllerBlockingStub groupStub() {
        return groupStub;
    }

    Pool pool() {
        return pool;
    }

    Path poolDir() {
        return poolDir;
    }

    @Override
    public void close() {
        served.close();
        pool.controllerClaim().release();
    }

    // ---- request builders of the controller's tests ----

    static VolumeCapability singleWriter() {
        return CsiRequests.mount(Mode.SINGLE_NODE_WRITER);
    }

    static CreateVolumeRequest.Builder createRequest(String name, long bytes) {
        return CsiRequests.createVolume(name, bytes, singleWriter());
    }

    static VolumeContentSource fromSnapshot(String snapshotId) {
        return VolumeContentSource.newBuilder()
                .setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(snapshotId))
                .build();
    }

    static VolumeContentSource fromVolume(String volumeId) {
        return VolumeContentSource.newBuilder()
                .setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(volumeId))
                .build();
    }
}
