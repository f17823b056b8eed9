package dev.blockpool.driver;

import csi.v1.ControllerGrpc;
import csi.v1.Csi.PluginCapability;
import csi.v1.GroupControllerGrpc;
import csi.v1.NodeGrpc;
import csi.v1.SnapshotMetadataGrpc;
import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.HostTools;
import dev.blockpool.common.OperationLocks;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.controller.ControllerService;
import dev.blockpool.controller.GroupControllerService;
import dev.blockpool.controller.OtherNodes;
import dev.blockpool.controller.SnapshotMetadataService;
import dev.blockpool.csi.PoolScope;
import dev.blockpool.csi.StatusInterceptor;
import dev.blockpool.driver.server.CallDeadlines;
import dev.blockpool.driver.server.CallLoggingInterceptor;
import dev.blockpool.driver.server.CallThreads;
import dev.blockpool.driver.server.IdleMemoryRelease;
import dev.blockpool.driver.server.UnixSocketServer;
import dev.blockpool.host.KubeletPaths;
import dev.blockpool.host.NodeHost;
import dev.blockpool.host.filesystems.FilesystemFreezes;
import dev.blockpool.host.filesystems.HostFilesystems;
import dev.blockpool.identity.HostReadiness;
import dev.blockpool.identity.IdentityService;
import dev.blockpool.identity.PoolLookWithin;
import dev.blockpool.identity.Readiness;
import dev.blockpool.metrics.BuildInfo;
import dev.blockpool.metrics.DriverMetrics;
import dev.blockpool.node.FrozenVolumes;
import dev.blockpool.node.FullPoolGuard;
import dev.blockpool.node.GroupMemberFreeze;
import dev.blockpool.node.HostHolds;
import dev.blockpool.node.NodeCensus;
import dev.blockpool.node.NodeIdentity;
import dev.blockpool.node.NodeService;
import dev.blockpool.node.PoolVolumeCatalog;
import dev.blockpool.node.PublishedIoLimits;
import dev.blockpool.peer.PeerChannel;
import dev.blockpool.peer.VolumeRetirer;
import dev.blockpool.pool.ImageFiles;
import dev.blockpool.pool.MemberFreeze;
import dev.blockpool.pool.NodeClaim;
import dev.blockpool.pool.NodeHolds;
import dev.blockpool.pool.NodeIoLimits;
import dev.blockpool.pool.NodeRecord;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.ReconcileSteps;
import dev.blockpool.pool.transfer.PoolImageExports;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The composition root: builds the pool, the host side and the services the mode asks for,
 * and serves them on one Unix-socket gRPC server.
 */
public final class Driver {

    private static final Logger log = LoggerFactory.getLogger(Driver.class);
    /** Files younger than this are left alone by the pool's reconcile; the controller repeats it this often. */
    private static final Duration RECONCILE_SETTLE_TIME = Duration.ofMinutes(10);
    /**
     * How often a node looks whether its pool is short of room (one statfs, and only then its
     * staged volumes): the warning level must exceed what writers can write in this time.
     */
    private static final Duration FULL_POOL_LOOK = Duration.ofSeconds(5);
    /**
     * The reconcile reads every record in the pool (docs/performance.md, "Against the targets", for
     * what that costs): it waits this long after the server is up, so that the driver's start and the
     * sidecars' first calls do not share a small node's CPU with it. What it removes has waited
     * the settle time.
     */
    private static final Duration RECONCILE_START_DELAY = Duration.ofSeconds(5);
    /**
     * How long the start waits for its pool before it serves without it: far more than a pool
     * that answers takes to open (a few directories, a lock, a record), and little beside the
     * time livenessprobe and kubelet's registrar give a starting driver.
     */
    private static final Duration POOL_ANSWERS_WITHIN = Duration.ofSeconds(2);

    private final DriverConfig config;
    private final String version;
    private final Background background;

    public Driver(DriverConfig config, String version) {
        this(config, version, new Background(RECONCILE_START_DELAY, ReconcileSteps.ALL));
    }

    /** For tests: when the reconcile starts, and what is told before each of its steps. */
    Driver(DriverConfig config, String version, Background background) {
        this.config = config;
        this.version = version;
        this.background = background;
    }

    /** When the pool's reconcile starts after the driver serves, and what is told before each of its steps. */
    record Background(Duration reconcileDelay, ReconcileSteps reconcileSteps) {}

    /** A started driver: its server, and what must stop with it. */
    public static final class Running {
        private final UnixSocketServer server;
        private final PoolOpening opening;
        private final IdleMemoryRelease memory;
        private final Optional<DriverMetrics> metrics;
        private final Optional<PeerChannel> peers;
        /** Set once the pool's services are served; under the opening's lock. */
        private volatile BackgroundWork background;

        private Running(
                UnixSocketServer server,
                PoolOpening opening,
                IdleMemoryRelease memory,
                Optional<DriverMetrics> metrics,
                Optional<PeerChannel> peers) {
            this.server = server;
            this.opening = opening;
            this.memory = memory;
            this.metrics = metrics;
            this.peers = peers;
        }

        public UnixSocketServer server() {
            return server;
        }

        /**
         * Stops serving and everything beside the calls, within {@code grace}: no claim on the pool
         * is taken from the moment it begins, the background work is told to end, the calls in
         * flight are drained, and the background work is waited for. Then the claims are let go for
         * good: once this returns, nothing of this driver writes in the pool or takes a claim. A
         * pool that has not opened yet is not waited for: its opening goes no further than the step
         * it waits in.
         */
        public void stop(Duration grace) {
            long deadline = System.nanoTime() + grace.toNanos();
            Optional<PoolOpening.Opened> opened = opening.stop();
            opened.ifPresent(open -> {
                open.stopClaiming(); // before anything else, so that nothing races the stop to a claim
                background.requestStop();
            });
            memory.close();
            server.stop(grace);
            peers.ifPresent(PeerChannel::close); // after the calls that may pull through it
            boolean ended = opened.isEmpty() || background.stop(deadline);
            opened.ifPresent(PoolOpening.Opened::release);
            metrics.ifPresent(DriverMetrics::close);
            log.info(
                    "stopped{}",
                    opened.isEmpty()
                            ? " before its pool answered"
                            : ended ? "" : " (some background work did not end in time)");
        }

        /** Whether the background work, the memory watcher and the pool's opening have all ended. */
        boolean backgroundEnded() {
            BackgroundWork work = background;
            return (work == null || work.ended()) && memory.ended() && opening.ended();
        }

        /** The part of the start that needs the pool. */
        PoolOpening opening() {
            return opening;
        }

        /** The pool's background work, once its services are served. */
        BackgroundWork background() {
            return background;
        }

        /** The open pool, once its services are served. */
        Pool pool() {
            return opening.served().orElseThrow().pool();
        }

        /** The node's claim on the pool, once its services are served, where the node is served. */
        Optional<NodeClaim> nodeClaim() {
            return opening.served().orElseThrow().nodeClaim();
        }

        Optional<DriverMetrics> metrics() {
            return metrics;
        }
    }

    public Running start() throws IOException {
        CommandRunner commands = new ProcessCommandRunner();
        // One set of threads for the system calls that can hang, so that a dead pool holds at most those.
        BlockingCalls blocking = new BlockingCalls();
        NodeHost nodeHost =
                config.mode().servesNode() ? NodeHost.onThisHost(commands, blocking, config.cgroupRoot()) : null;
        List<String> tools = new ArrayList<>();
        if (config.mode().servesController()) {
            tools.addAll(ImageFiles.TOOLS);
        }
        if (config.mode().servesNode()) {
            tools.addAll(HostFilesystems.TOOLS); // mounts and loop devices are system calls
        }
        HostReadiness host = new HostReadiness(
                config.poolDir(),
                tools,
                config.mode().servesNode() ? HostFilesystems.FILESYSTEM_TOOLS : Map.of(),
                HostTools.onThisHost());
        // A pool that answers opens in a moment, and the driver starts as it always did; one that
        // does not is opened once it answers, while the driver serves without it (PoolOpening).
        PoolOpening opening = PoolOpening.start(
                config.poolDir(), beforeEachStep -> open(commands, blocking, nodeHost, host, beforeEachStep));
        Optional<PoolOpening.Opened> openAtStart = opening.awaitWithin(POOL_ANSWERS_WITHIN);
        // One operation per volume at a time, whichever service it comes through.
        OperationLocks locks = new OperationLocks();
        CallThreads threads = new CallThreads();
        // This node's certificate and its client of the other nodes; it serves them once the pool is open.
        Optional<PeerChannel> peers = config.peers().map(peerConfig -> PeerChannel.open(peerConfig, config.nodeId()));

        List<ServerServiceDefinition> services = new ArrayList<>();
        openAtStart.ifPresent(open -> {
            services.addAll(poolServices(open, nodeHost, locks, threads, peers));
            opening.serving();
        });
        List<PluginCapability> capabilities = new ArrayList<>();
        if (config.mode().servesController()) {
            capabilities.add(IdentityService.service(PluginCapability.Service.Type.CONTROLLER_SERVICE));
            capabilities.add(IdentityService.service(PluginCapability.Service.Type.GROUP_CONTROLLER_SERVICE));
            capabilities.add(IdentityService.service(PluginCapability.Service.Type.SNAPSHOT_METADATA_SERVICE));
            capabilities.add(IdentityService.expansion(PluginCapability.VolumeExpansion.Type.ONLINE));
            capabilities.add(IdentityService.expansion(PluginCapability.VolumeExpansion.Type.OFFLINE));
        }
        if (config.scope() instanceof PoolScope.NodeLocal) {
            // Each volume and snapshot is in the pool of one node (their accessible_topology).
            capabilities.add(IdentityService.service(PluginCapability.Service.Type.VOLUME_ACCESSIBILITY_CONSTRAINTS));
            capabilities.add(IdentityService.service(PluginCapability.Service.Type.SNAPSHOT_ACCESSIBILITY_CONSTRAINTS));
        }
        host.limits().forEach(limit -> log.warn("{}", limit));
        services.add(new IdentityService(config.driverName(), version, capabilities, opening).bindService());

        Optional<DriverMetrics> metrics = Optional.empty();
        if (config.httpEndpoint().isPresent()) {
            metrics = Optional.of(DriverMetrics.serve(
                    config.httpEndpoint().get(),
                    new BuildInfo.Build(
                            config.driverName(),
                            version,
                            Main.buildProperty("csiSpecVersion"),
                            config.mode().name().toLowerCase(Locale.ROOT),
                            config.poolScope().name().toLowerCase(Locale.ROOT))));
        }
        IdleMemoryRelease memory = IdleMemoryRelease.start();
        UnixSocketServer server;
        try {
            server = UnixSocketServer.start(
                    config.endpoint(),
                    services,
                    openAtStart.isPresent() ? List.of() : opening.standIns(poolServiceDescriptors()),
                    List.of(new StatusInterceptor(), new CallDeadlines(threads), new CallLoggingInterceptor(), memory),
                    metrics.map(m -> List.of(m.calls())).orElse(List.of()),
                    threads);
        } catch (IOException | RuntimeException e) {
            threads.close();
            opening.stop().ifPresent(PoolOpening.Opened::release);
            memory.close();
            metrics.ifPresent(DriverMetrics::close);
            peers.ifPresent(PeerChannel::close);
            throw e;
        }
        Running running = new Running(server, opening, memory, metrics, peers);
        if (openAtStart.isPresent()) {
            serveInBackground(openAtStart.get(), nodeHost, locks, running);
        } else {
            log.warn(
                    "the pool {} has not opened within {}: Probe answers not ready and every call but "
                            + "Identity's UNAVAILABLE until it does; the start goes on then",
                    config.poolDir(),
                    BlockingCalls.describe(POOL_ANSWERS_WITHIN));
            opening.whenOpen(open -> {
                server.serve(poolServices(open, nodeHost, locks, threads, peers));
                opening.serving();
                serveInBackground(open, nodeHost, locks, running);
            });
        }
        return running;
    }

    /**
     * Everything of the start that needs the pool, in order: the directory, the pool, the node's
     * claim and record, the thaw of what a group snapshot left frozen; {@code beforeEachStep} may
     * end it between two of them.
     */
    private PoolOpening.Opened open(
            CommandRunner commands,
            BlockingCalls blocking,
            NodeHost nodeHost,
            HostReadiness host,
            Runnable beforeEachStep) {
        requireWritableDirectory(config.poolDir());
        beforeEachStep.run();
        Pool pool = Pool.open(
                config.poolDir(), commands, Clock.systemUTC(), RECONCILE_SETTLE_TIME, blocking, config.capacity());
        Optional<NodeClaim> nodeClaim = Optional.empty();
        if (config.mode().servesNode()) {
            beforeEachStep.run();
            NodeIdentity node = nodeIdentity();
            // One plugin per node ID on the pool: a second one is not ready, and says who holds the ID.
            nodeClaim = Optional.of(pool.nodeClaim(node.nodeId()));
            try {
                Optional<String> duplicate = nodeClaim.get().problem();
                if (duplicate.isPresent()) {
                    log.error("{}", duplicate.get());
                } else {
                    // ControllerPublish checks the node and its attach limit against this record.
                    beforeEachStep.run();
                    pool.nodes().register(new NodeRecord(node.nodeId(), node.maxVolumesPerNode(), node.topology()));
                }
            } catch (RuntimeException e) {
                nodeClaim.get().close();
                throw e;
            }
        }
        MemberFreeze freeze = MemberFreeze.NONE;
        if (config.mode().servesNode()
                && config.mode().servesController()
                && config.scope() instanceof PoolScope.NodeLocal) {
            // Here one process holds both the pool and the members' mounts: groups of one instant.
            // What a group snapshot left frozen is the node's: thawed only under the node's claim,
            // never by a second process on the pool while the first may be freezing.
            beforeEachStep.run();
            NodeClaim claim = nodeClaim.orElseThrow();
            GroupMemberFreeze members = new GroupMemberFreeze(
                    pool,
                    FilesystemFreezes.onThisHost(nodeHost.loops(), blocking),
                    Clock.systemUTC(),
                    GroupMemberFreeze.BOUND,
                    () -> claim.problem().isEmpty());
            members.thawLeftovers();
            freeze = members;
        }
        // A controller standing by while another acts on the pool is alive and ready: its
        // livenessprobe asks Probe, and restarting it would change nothing. Its changes are
        // refused, naming the acting controller; Probe is where it takes over once the pool is free.
        // What it looks at is in the pool, which may not answer: Probe waits for it only so long.
        Optional<NodeClaim> claimed = nodeClaim;
        Readiness lookingAtThePool = () -> {
            if (config.mode().servesController()) {
                pool.controllerClaim().standingBy(); // logged once, when it starts standing by
            }
            List<String> problems = new ArrayList<>(host.problems());
            claimed.flatMap(NodeClaim::problem).ifPresent(problems::add);
            return problems;
        };
        return new PoolOpening.Opened(
                pool, freeze, nodeClaim, new PoolLookWithin(lookingAtThePool, blocking, config.poolDir()));
    }

    /** The pool directory exists (made when missing) and this process may write in it. */
    private static void requireWritableDirectory(Path pool) {
        try {
            Files.createDirectories(pool);
        } catch (FileAlreadyExistsException e) {
            // something is there: the look below says what, or why it cannot be looked at
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot create pool directory " + pool + ": " + e.getMessage());
        }
        try {
            if (!Files.readAttributes(pool, BasicFileAttributes.class).isDirectory() || !Files.isWritable(pool)) {
                throw new IllegalArgumentException("pool directory " + pool + " is not a writable directory");
            }
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot look at pool directory " + e.getMessage());
        }
    }

    private NodeIdentity nodeIdentity() {
        return NodeIdentity.of(config.nodeId(), config.maxVolumesPerNode());
    }

    /** The services that need the pool; {@link #poolServices} makes them, in this order. */
    private List<ServiceDescriptor> poolServiceDescriptors() {
        List<ServiceDescriptor> services = new ArrayList<>();
        if (config.mode().servesController()) {
            services.add(ControllerGrpc.getServiceDescriptor());
            services.add(GroupControllerGrpc.getServiceDescriptor());
            services.add(SnapshotMetadataGrpc.getServiceDescriptor());
        }
        if (config.mode().servesNode()) {
            services.add(NodeGrpc.getServiceDescriptor());
        }
        return services;
    }

    private List<ServerServiceDefinition> poolServices(
            PoolOpening.Opened open,
            NodeHost nodeHost,
            OperationLocks locks,
            CallThreads threads,
            Optional<PeerChannel> peers) {
        List<ServerServiceDefinition> services = new ArrayList<>();
        if (config.mode().servesController()) {
            NodeHolds holds = NodeHolds.NONE;
            if (config.mode().servesNode() && config.scope() instanceof PoolScope.NodeLocal) {
                // One process holds both the pool and the volumes' loop devices and mounts: none is
                // deleted while staged here.
                holds = new HostHolds(open.pool(), nodeHost.loops());
            }
            // Where the node is served too, a volume's changed I/O limits reach its pods here at once.
            NodeIoLimits ioLimits = config.mode().servesNode()
                    ? new PublishedIoLimits(nodeHost, new PoolVolumeCatalog(open.pool(), config.scope()), locks)
                    : NodeIoLimits.NONE;
            ControllerService controller = new ControllerService(
                    open.pool(),
                    locks,
                    config.scope(),
                    holds,
                    peers.map(PeerChannel::otherNodes).orElse(OtherNodes.NONE),
                    ioLimits);
            services.add(controller.bindService());
            peers.ifPresent(channel -> serveToPeers(channel, open.pool(), controller));
            services.add(new GroupControllerService(open.pool(), locks, open.freeze(), config.scope()).bindService());
            services.add(new SnapshotMetadataService(open.pool()).bindService());
        }
        if (config.mode().servesNode()) {
            KubeletPaths paths =
                    new KubeletPaths(config.poolDir(), config.endpoint().socketPath());
            PoolVolumeCatalog catalog = new PoolVolumeCatalog(open.pool(), config.scope());
            FrozenVolumes frozen = open.freeze() instanceof GroupMemberFreeze members ? members : FrozenVolumes.NONE;
            services.add(new NodeService(
                            nodeIdentity(), catalog, nodeHost, paths, locks, threads.forRestOfInPlaceCall(), frozen)
                    .bindService());
        }
        return services;
    }

    /**
     * The other nodes read this node's pool, hand it ModifyVolume of its volumes and retire those
     * that moved to them, once it is open.
     */
    private static void serveToPeers(PeerChannel channel, Pool pool, ControllerService controller) {
        try {
            channel.serve(
                    new PoolImageExports(pool, Clock.systemUTC()),
                    controller::modifyHere,
                    VolumeRetirer.of(controller::holderHere, controller::retireHere));
        } catch (IOException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
    }

    /**
     * What runs beside the calls once the pool's services are served: the metrics' census, the
     * pool's reconcile and the node's warm-up. It makes no system call on the pool itself.
     */
    private void serveInBackground(PoolOpening.Opened open, NodeHost nodeHost, OperationLocks locks, Running running) {
        running.metrics().ifPresent(metrics -> {
            if (config.mode().servesController()) {
                metrics.countPool(open.pool()::census);
            }
            if (config.mode().servesNode()) {
                NodeCensus census = new NodeCensus(nodeHost, new PoolVolumeCatalog(open.pool(), config.scope()));
                metrics.countNode(census::take);
            }
            if (open.freeze() instanceof GroupMemberFreeze members) {
                metrics.countFrozen(members::frozenCount);
            }
        });
        // The reconcile starts once the driver serves, beside the calls, whose per-ID locks it
        // shares. A crash shortly before a restart leaves files too young for it; only the
        // controller repeats it: node plugins sharing the pool leave that to the one controller.
        BackgroundWork work = BackgroundWork.start(
                open.pool(),
                locks,
                config.mode().servesController(),
                background.reconcileDelay(),
                RECONCILE_SETTLE_TIME,
                background.reconcileSteps());
        if (config.mode().servesNode()) {
            work.add(NodeHost.prepareInBackground());
            FullPoolGuard guard = new FullPoolGuard(nodeHost, new PoolVolumeCatalog(open.pool(), config.scope()));
            work.every(FULL_POOL_LOOK, "full-pool-guard", guard::look);
            // The I/O limits of the published volumes, as their records have them now: a change made
            // by a controller elsewhere reaches the pods' cgroups, and a container started since (a
            // cgroup of its own on cgroup v1) at once.
            PublishedIoLimits ioLimits =
                    new PublishedIoLimits(nodeHost, new PoolVolumeCatalog(open.pool(), config.scope()), locks);
            work.every(
                    PublishedIoLimits.LOOK_EVERY, "io-limits", ioLimits::look, nodeHost.throttles()::awaitNewContainer);
        }
        if (open.freeze() instanceof GroupMemberFreeze members) {
            // A freeze past its bound is thawed, and a thaw that failed is tried again, while the driver runs.
            work.every(GroupMemberFreeze.LOOK_EVERY, "freeze-watch", members::look);
        }
        running.background = work;
        log.info(
                "{} {} serving {} on {} (node {}, {} pool {})",
                config.driverName(),
                version,
                config.mode().name().toLowerCase(),
                config.endpoint(),
                config.nodeId(),
                config.poolScope().name().toLowerCase(),
                config.poolDir());
        running.metrics()
                .ifPresent(m ->
                        log.info("serving metrics on {}", config.httpEndpoint().get()));
    }
}
