package dev.blockpool.pool;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.OperationLocks;
import dev.blockpool.common.StorageException;
import dev.blockpool.pool.records.PoolLockFile;
import dev.blockpool.pool.records.RecordLock;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;

/**
 * The storage pool: a directory that holds everything the driver knows. Layout:
 * <pre>
 *   volumes/&lt;id&gt;.img, volumes/&lt;id&gt;.json      volume images and their records
 *   snapshots/&lt;id&gt;.img, snapshots/&lt;id&gt;.json  snapshot images and their records
 *   groups/&lt;id&gt;.json                           group snapshots: the commit point of their member snapshots
 *   nodes/&lt;node-id&gt;.json                        registered nodes
 *   frozen/&lt;volume-id&gt;                          a volume whose file system a group snapshot is freezing
 *   nodes/&lt;node-id&gt;.lock                        held by the one node plugin of that ID
 *   incoming/&lt;volume-id&gt;.img, .json            an image being pulled from another node, and how far
 *   incoming/.pulls.lock                          one pull of a volume at a time, across processes
 *   outgoing/&lt;transfer-id&gt;.N.img, .json         frozen copies of a volume another node is pulling
 *   controller.lock, records.lock                 locks every process sharing the pool takes
 * </pre>
 * Nothing essential lives only in memory: a restarted driver reads the same state back.
 */
public final class Pool {

    private final Path root;
    private final PoolSpace space;
    private final PoolCapacity capacity;
    private final Volumes volumes;
    private final Snapshots snapshots;
    private final GroupSnapshots groups;
    private final Nodes nodes;
    private final Attachments attachments;
    private final ControllerClaim controllerClaim;
    private final PoolHealth health;
    private final SnapshotMetadata snapshotMetadata;
    private final Clock clock;
    private final Duration settleTime;
    private final ImageFiles images;

    private Pool(
            Path root,
            CommandRunner commands,
            Clock clock,
            Duration settleTime,
            BlockingCalls blocking,
            CapacityPolicy policy) {
        this.root = root;
        this.clock = clock;
        this.settleTime = settleTime;
        this.space = new PoolSpace(root);
        this.capacity = new PoolCapacity(root, space, policy, clock);
        this.images = new ImageFiles(commands);
        RecordLock recordLock = new RecordLock(root);
        this.snapshots = new Snapshots(root.resolve("snapshots"), images, capacity, clock, recordLock);
        this.volumes = new Volumes(root.resolve("volumes"), images, capacity, snapshots, clock, recordLock);
        this.groups = new GroupSnapshots(root.resolve("groups"), snapshots, volumes, clock);
        this.nodes = new Nodes(root.resolve("nodes"));
        this.attachments = new Attachments(volumes, nodes, recordLock, new AttachmentIndex(root));
        this.controllerClaim = new ControllerClaim(root, clock);
        this.health = new PoolHealth(root, volumes, capacity, blocking, clock, settleTime);
        this.snapshotMetadata = new SnapshotMetadata(snapshots);
    }

    /**
     * Opens the pool at {@code root}, creating its directories when new, and removes the temporary
     * record files of writers that are gone (a kill's leftovers). It reads no record: the
     * reconcile of what a crash left half-done ({@link #reconcile(OperationLocks)}) reads them
     * all, so the driver runs it beside its calls once it serves, never before.
     */
    public static Pool open(Path root, CommandRunner commands, Clock clock, Duration settleTime) {
        return open(root, commands, clock, settleTime, new BlockingCalls());
    }

    /** {@link #open}, its system calls that can hang on the threads of {@code blocking}. */
    public static Pool open(
            Path root, CommandRunner commands, Clock clock, Duration settleTime, BlockingCalls blocking) {
        return open(root, commands, clock, settleTime, blocking, CapacityPolicy.DEFAULT);
    }

    /** {@link #open}, promising what {@code policy} allows; see {@link PoolCapacity}. */
    public static Pool open(
            Path root,
            CommandRunner commands,
            Clock clock,
            Duration settleTime,
            BlockingCalls blocking,
            CapacityPolicy policy) {
        try {
            for (String dir : new String[] {
                "volumes", "snapshots", "groups", "nodes", "frozen", PoolCapacity.INCOMING, Reconciler.OUTGOING
            }) {
                Files.createDirectories(root.resolve(dir));
            }
            // A kill's temporary record files go now, whatever the reconcile later gets to.
            Reconciler.removeAbandonedTemporaryFiles(root);
            // made now, so that no later call that only looks leaves the pool changed
            if (!Files.exists(root.resolve(RecordLock.FILE_NAME))) {
                PoolLockFile.tryTake(root.resolve(RecordLock.FILE_NAME)).ifPresent(PoolLockFile::close);
            }
            // Every path of the pool is then named without symlinks, as the kernel names files.
            return new Pool(root.toRealPath(), commands, clock, settleTime, blocking, policy);
        } catch (IOException e) {
            throw StorageException.io(e, "cannot create the pool directories under %s", root);
        }
    }

    /**
     * Removes what interrupted work left behind: temporary files and images without their records.
     * Only files untouched for the settle time are considered, so that a create in progress in
     * another process sharing the pool is never robbed of its image, and no image of an ID that
     * holds one of {@code locks} (an operation in progress in this process). Safe beside the
     * calls being served, when they share {@code locks}.
     */
    public void reconcile(OperationLocks locks) {
        reconcile(locks, ReconcileSteps.ALL);
    }

    /** {@link #reconcile(OperationLocks)}, telling {@code steps} before each step, which may end it there. */
    public void reconcile(OperationLocks locks, ReconcileSteps steps) {
        Instant now = clock.instant();
        new Reconciler(root, now.minus(settleTime), now.minus(Reconciler.TRANSFER_IDLE), locks, steps).run();
    }

    public Path root() {
        return root;
    }

    /** How the pool makes, grows and copies its images. */
    public ImageFiles images() {
        return images;
    }

    public Volumes volumes() {
        return volumes;
    }

    public Snapshots snapshots() {
        return snapshots;
    }

    public GroupSnapshots groups() {
        return groups;
    }

    /** The volumes whose file systems a group snapshot of this host is freezing. */
    public FreezeMarks freezeMarks() {
        return new FreezeMarks(root.resolve("frozen"));
    }

    public Nodes nodes() {
        return nodes;
    }

    public Attachments attachments() {
        return attachments;
    }

    /** Whether this process is the one node plugin of {@code nodeId} on the pool; see {@link NodeClaim}. */
    public NodeClaim nodeClaim(String nodeId) {
        return new NodeClaim(root.resolve("nodes"), nodeId, clock);
    }

    /** Whether this process is the pool's one acting controller; see {@link ControllerClaim}. */
    public ControllerClaim controllerClaim() {
        return controllerClaim;
    }

    public SnapshotMetadata snapshotMetadata() {
        return snapshotMetadata;
    }

    public PoolHealth health() {
        return health;
    }

    public PoolSpace space() {
        return space;
    }

    /** What the pool has promised and may still promise; see {@link PoolCapacity}. */
    public PoolCapacity capacity() {
        return capacity;
    }

    /** Counts what the pool holds now, reading no record; see {@link PoolCensus}. */
    public PoolCensus.Figures census() {
        return new PoolCensus(root, space, capacity).take();
    }
}
