package dev.blockpool.driver;

import csi.v1.Csi.PluginCapability;
import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.HostTools;
import dev.blockpool.common.OperationLocks;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.controller.ControllerService;
import dev.blockpool.controller.GroupControllerService;
import dev.blockpool.controller.MemberFreeze;
import dev.blockpool.controller.NodeHolds;
import dev.blockpool.controller.SnapshotMetadataService;
import dev.blockpool.csi.PoolScope;
import dev.blockpool.csi.StatusInterceptor;
import dev.blockpool.host.FilesystemFreezes;
import dev.blockpool.host.HostFilesystems;
import dev.blockpool.host.KubeletPaths;
import dev.blockpool.host.LoopAttachments;
import dev.blockpool.host.NodeHost;
import dev.blockpool.identity.HostReadiness;
import dev.blockpool.identity.IdentityService;
import dev.blockpool.identity.PoolLookWithin;
import dev.blockpool.identity.Readiness;
import dev.blockpool.metrics.BuildInfo;
import dev.blockpool.metrics.DriverMetrics;
import dev.blockpool.node.NodeCensus;
import dev.blockpool.node.NodeIdentity;
import dev.blockpool.node.NodeService;
import dev.blockpool.node.PoolVolumeCatalog;
import dev.blockpool.pool.ImageFiles;
import dev.blockpool.pool.NodeClaim;
import dev.blockpool.pool.NodeRecord;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.ReconcileSteps;
import io.grpc.ServerServiceDefinition;
import java.io.IOException;
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
     * The reconcile reads every record in the pool (docs/performance.md, "Against the targets", for
     * what that costs): it waits this long after the server is up, so that the driver's start and the
     * sidecars' first calls do not share a small node's CPU with it. What it removes has waited
     * the settle time.
     */
    private static final Duration RECONCILE_START_DELAY = Duration.ofSeconds(5);

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
    public record Running(
            UnixSocketServer server,
            BackgroundWork background,
            IdleMemoryRelease memory,
            Pool pool,
            Optional<NodeClaim> nodeClaim,
            Optional<DriverMetrics> metrics) {

        /**
         * Stops serving and everything beside the calls, within {@code grace}: the background work
         * is told to end first, the calls in flight are drained, and the background work is waited
         * for. Then the controller's claim on the pool is let go for good: once this returns,
         * nothing of this driver writes in the pool or takes the claim.
         */
        public void stop(Duration grace) {
            long deadline = System.nanoTime() + grace.toNanos();
            background.requestStop();
            memory.close();
            server.stop(grace);
            boolean ended = background.stop(deadline);
            pool.controllerClaim().close();
            nodeClaim.ifPresent(NodeClaim::close);
            metrics.ifPresent(DriverMetrics::close);
            log.info("stopped{}", ended ? "" : " (some background work did not end in time)");
        }

        /** Whether the background work and the memory watcher have all ended. */
        boolean backgroundEnded() {
            return background.ended() && memory.ended();
        }
    }

    public Running start() throws IOException {
        CommandRunner commands = new ProcessCommandRunner();
        // One set of threads for the system calls that can hang, so that a dead pool holds at most those.
        BlockingCalls blocking = new BlockingCalls();
        Pool pool = Pool.open(config.poolDir(), commands, Clock.systemUTC(), RECONCILE_SETTLE_TIME, blocking);
        // One operation per volume at a time, whichever service it comes through.
        OperationLocks locks = new OperationLocks();

        List<ServerServiceDefinition> services = new ArrayList<>();
        List<PluginCapability> capabilities = new ArrayList<>();
        List<String> tools = new ArrayList<>();
        Optional<NodeClaim> nodeClaim = Optional.empty();
        Optional<NodeCensus> nodeCensus = Optional.empty();
        NodeHost nodeHost = null;
        MemberFreeze freeze = MemberFreeze.NONE;
        NodeHolds holds = NodeHolds.NONE;
        if (config.mode().servesNode()) {
            nodeHost = NodeHost.onThisHost(commands, blocking);
            if (config.mode().servesController() && config.scope() instanceof PoolScope.NodeLocal) {
                // Here one process holds both the pool and the members' mounts: groups of one instant.
                GroupMemberFreeze members =
                        new GroupMemberFreeze(pool, FilesystemFreezes.onThisHost(nodeHost.loops(), blocking));
                members.thawLeftovers();
                freeze = members;
                // and the volumes' loop devices and mounts: none is deleted while staged here.
                LoopAttachments loops = nodeHost.loops();
                holds = volume ->
                        loops.holders(pool.volumes().imagePath(volume.id())).map(LoopAttachments.Holders::describe);
            }
        }
        if (config.mode().servesController()) {
            services.add(new ControllerService(pool, locks, config.scope(), holds).bindService());
            services.add(new GroupControllerService(pool, locks, freeze).bindService());
            services.add(new SnapshotMetadataService(pool).bindService());
            capabilities.add(IdentityService.service(PluginCapability.Service.Type.CONTROLLER_SERVICE));
            capabilities.add(IdentityService.service(PluginCapability.Service.Type.GROUP_CONTROLLER_SERVICE));
            capabilities.add(IdentityService.service(PluginCapability.Service.Type.SNAPSHOT_METADATA_SERVICE));
            capabilities.add(IdentityService.expansion(PluginCapability.VolumeExpansion.Type.ONLINE));
            capabilities.add(IdentityService.expansion(PluginCapability.VolumeExpansion.Type.OFFLINE));
            tools.addAll(ImageFiles.TOOLS);
        }
        if (config.scope() instanceof PoolScope.NodeLocal) {
            // Each volume is reachable only on the node whose pool holds it (its accessible_topology).
            capabilities.add(IdentityService.service(PluginCapability.Service.Type.VOLUME_ACCESSIBILITY_CONSTRAINTS));
        }
        if (config.mode().servesNode()) {
            NodeIdentity node = NodeIdentity.of(config.nodeId(), config.maxVolumesPerNode());
            // One plugin per node ID on the pool: a second one is not ready, and says who holds the ID.
            nodeClaim = Optional.of(pool.nodeClaim(node.nodeId()));
            Optional<String> duplicate = nodeClaim.get().problem();
            if (duplicate.isPresent()) {
                log.error("{}", duplicate.get());
            } else {
                // ControllerPublish checks the node and its attach limit against this record.
                pool.nodes().register(new NodeRecord(node.nodeId(), node.maxVolumesPerNode(), node.topology()));
            }
            KubeletPaths paths =
                    new KubeletPaths(config.poolDir(), config.endpoint().socketPath());
            PoolVolumeCatalog catalog = new PoolVolumeCatalog(pool, config.scope());
            services.add(new NodeService(node, catalog, nodeHost, paths, locks).bindService());
            nodeCensus = Optional.of(new NodeCensus(nodeHost, catalog));
            tools.addAll(HostFilesystems.TOOLS); // mounts and loop devices are system calls
        }

        HostReadiness host = new HostReadiness(
                config.poolDir(),
                tools,
                config.mode().servesNode() ? HostFilesystems.FILESYSTEM_TOOLS : Map.of(),
                HostTools.onThisHost());
        host.limits().forEach(limit -> log.warn("{}", limit));
        // A controller standing by while another acts on the pool is alive and ready: its
        // livenessprobe asks Probe, and restarting it would change nothing. Its changes are
        // refused, naming the acting controller; Probe is where it takes over once the pool is free.
        // What it looks at is in the pool, which may not answer: Probe waits for it only so long.
        Optional<NodeClaim> node = nodeClaim;
        Readiness lookingAtThePool = () -> {
            if (config.mode().servesController()) {
                pool.controllerClaim().standingBy(); // logged once, when it starts standing by
            }
            List<String> problems = new ArrayList<>(host.problems());
            node.flatMap(NodeClaim::problem).ifPresent(problems::add);
            return problems;
        };
        Readiness readiness = new PoolLookWithin(lookingAtThePool, blocking, config.poolDir());
        services.add(new IdentityService(config.driverName(), version, capabilities, readiness).bindService());

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
            if (config.mode().servesController()) {
                metrics.get().countPool(pool::census);
            }
            if (nodeCensus.isPresent()) {
                metrics.get().countNode(nodeCensus.get()::take);
            }
        }
        IdleMemoryRelease memory = IdleMemoryRelease.start();
        UnixSocketServer server = UnixSocketServer.start(
                config.endpoint(),
                services,
                List.of(new StatusInterceptor(), new CallDeadlines(), new CallLoggingInterceptor(), memory),
                metrics.map(m -> List.of(m.calls())).orElse(List.of()));
        // The reconcile starts once the driver serves, beside the calls, whose per-ID locks it
        // shares. A crash shortly before a restart leaves files too young for it; only the
        // controller repeats it: node plugins sharing the pool leave that to the one controller.
        BackgroundWork work = BackgroundWork.start(
                pool,
                locks,
                config.mode().servesController(),
                background.reconcileDelay(),
                RECONCILE_SETTLE_TIME,
                background.reconcileSteps());
        if (config.mode().servesNode()) {
            work.add(NodeHost.prepareInBackground());
        }
        log.info(
                "{} {} serving {} on {} (node {}, {} pool {})",
                config.driverName(),
                version,
                config.mode().name().toLowerCase(),
                config.endpoint(),
                config.nodeId(),
                config.poolScope().name().toLowerCase(),
                config.poolDir());
        metrics.ifPresent(
                m -> log.info("serving metrics on {}", config.httpEndpoint().get()));
        return new Running(server, work, memory, pool, nodeClaim, metrics);
    }
}
