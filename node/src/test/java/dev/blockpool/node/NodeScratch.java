package dev.blockpool.node;

import csi.v1.Csi;
import csi.v1.NodeGrpc;
import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.HostRequirements;
import dev.blockpool.common.OperationLocks;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.csi.CsiKeys;
import dev.blockpool.csi.InProcessCsi;
import dev.blockpool.host.KubeletPaths;
import dev.blockpool.host.NodeHost;
import dev.blockpool.pool.AccessType;
import dev.blockpool.pool.Allocation;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.Volume;
import dev.blockpool.pool.VolumeSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real-host test's node: its own temporary directory with a pool and kubelet's paths in it,
 * and the node services it serves there, as a JUnit extension registered on a field. Before each
 * test it makes the directory (root with loop devices, and the tools named, only); after it, it
 * closes what the test handed it and every service it served, last first, even when one fails,
 * then unmounts and detaches everything below the directory and deletes it.
 */
final class NodeScratch implements BeforeEachCallback, AfterEachCallback {

    static final long MiB = 1L << 20;

    private final String prefix;
    private final List<String> tools;
    /** One operation per volume at a time, across every service served: a restarted driver's are new. */
    private final OperationLocks locks = new OperationLocks();
    /** What to close, last made first. */
    private final Deque<AutoCloseable> closing = new ArrayDeque<>();

    private Path dir;
    private Path staging;
    private Pool pool;

    /** {@code tools}: the programs the test needs, without which it is skipped. */
    NodeScratch(String prefix, String... tools) {
        this.prefix = prefix;
        this.tools = List.of(tools);
    }

    @Override
    public void beforeEach(ExtensionContext context) throws Exception {
        HostRequirements.assumeRootWithLoopDevices();
        tools.forEach(HostRequirements::assumeCommand);
        dir = Files.createTempDirectory(prefix);
        staging = Files.createDirectories(dir.resolve("kubelet/staging/globalmount"));
        Files.createDirectories(dir.resolve("kubelet/pods"));
        Files.createDirectories(poolDir());
    }

    @Override
    public void afterEach(ExtensionContext context) throws Exception {
        if (dir == null) {
            return; // skipped before anything was made
        }
        Exception failure = null;
        // FUSE daemons and servers first: a mount below dir that never answers would stall the walk.
        while (!closing.isEmpty()) {
            try {
                closing.pop().close();
            } catch (Exception e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        try {
            RealHost.cleanUp(dir);
        } catch (Exception e) {
            if (failure == null) {
                failure = e;
            } else {
                failure.addSuppressed(e);
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    Path dir() {
        return dir;
    }

    /** kubelet's staging path of the test's volumes. */
    Path staging() {
        return staging;
    }

    /** Where the pool lives: a test may mount a file system there before the pool is opened. */
    Path poolDir() {
        return dir.resolve("pool");
    }

    /** The pool, opened on the first call. */
    Pool pool() {
        if (pool == null) {
            pool = Pool.open(poolDir(), new ProcessCommandRunner(), Clock.systemUTC(), Duration.ofHours(1));
        }
        return pool;
    }

    /**
     * A node service on this host, over the pool, served in-process until the test ends. Each
     * call serves a new one, as a restarted driver would: one that has learnt nothing yet.
     */
    NodeGrpc.NodeBlockingStub serve() {
        InProcessCsi server = InProcessCsi.serve(new NodeService(
                NodeIdentity.of("it-node", 64),
                new PoolVolumeCatalog(pool()),
                NodeHost.onThisHost(RealHost.RUNNER, new BlockingCalls()),
                new KubeletPaths(pool().root(), socket()),
                locks,
                Runnable::run,
                FrozenVolumes.NONE));
        closeAfter(server::close);
        return NodeGrpc.newBlockingStub(server.channel());
    }

    /** The node plugin's socket, as kubelet's paths know it. */
    Path socket() {
        return dir.resolve("csi.sock");
    }

    /** A sparse volume made in the pool, for one access type. */
    Volume volume(String name, long bytes, String fsType, AccessType type) {
        return pool().volumes()
                .create(new VolumeSpec(
                        name, bytes, fsType, Allocation.SPARSE, Set.of(type), Map.of(), Optional.empty()));
    }

    /**
     * The volume staged at kubelet's staging path through {@code node}, as kubelet stages it: the
     * volume context carries the fsType CreateVolume answered with.
     */
    void stage(NodeGrpc.NodeBlockingStub node, Volume volume, Csi.VolumeCapability capability) {
        node.nodeStageVolume(Csi.NodeStageVolumeRequest.newBuilder()
                .setVolumeId(volume.id())
                .setStagingTargetPath(staging.toString())
                .setVolumeCapability(capability)
                .putVolumeContext(CsiKeys.FS_TYPE, volume.fsType())
                .build());
    }

    /** The volume unstaged from kubelet's staging path through {@code node}. */
    void unstage(NodeGrpc.NodeBlockingStub node, Volume volume) {
        node.nodeUnstageVolume(Csi.NodeUnstageVolumeRequest.newBuilder()
                .setVolumeId(volume.id())
                .setStagingTargetPath(staging.toString())
                .build());
    }

    /** Closes {@code thing} once the test ends, before what was made earlier and before the clean-up. */
    void closeAfter(AutoCloseable thing) {
        closing.push(thing);
    }
}
