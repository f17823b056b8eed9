package dev.blockpool.driver;

import dev.blockpool.common.StorageException;
import dev.blockpool.csi.PoolScope;
import dev.blockpool.driver.logging.LogConfigurator;
import dev.blockpool.flexvolume.FlexVolume;
import dev.blockpool.peer.MoveCommand;
import dev.blockpool.peer.PeerCaCommand;
import dev.blockpool.pool.Ids;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The {@code blockpool-csi} command: the FlexVolume entry point, or the driver with its {@link Arguments}. */
public final class Main {

    /** The FlexVolume entry point: its own argument convention, answered before the command line is parsed. */
    static final String FLEXVOLUME = "flexvolume";

    private Main() {}

    public static void main(String[] args) {
        System.exit(run(args));
    }

    /** 0 after a clean stop (or help, or version), 2 for a mistake on the command line, 1 for a failed start. */
    static int run(String... args) {
        configureNetty();
        if (args.length > 0 && args[0].equals(FLEXVOLUME)) {
            // kubelet runs it for every call and parses all it prints: no logback, no server.
            return FlexVolume.runAlone(List.of(args).subList(1, args.length));
        }
        if (args.length > 0 && args[0].equals(PeerCaCommand.NAME)) {
            return PeerCaCommand.run(List.of(args).subList(1, args.length).toArray(String[]::new));
        }
        if (args.length > 0 && args[0].equals(MoveCommand.NAME)) {
            return MoveCommand.run(List.of(args).subList(1, args.length).toArray(String[]::new));
        }
        Arguments arguments;
        try {
            arguments = Arguments.parse(args, System.getenv());
            if (arguments.action() == Arguments.Action.HELP) {
                Arguments.printHelp();
                return 0;
            }
            if (arguments.action() == Arguments.Action.VERSION) {
                System.out.println(versionLine());
                return 0;
            }
            if (arguments.endpoint().isEmpty()) {
                throw new Arguments.Usage("no endpoint given: pass --endpoint or set CSI_ENDPOINT");
            }
        } catch (Arguments.Usage e) {
            System.err.println("blockpool-csi: " + e.getMessage() + " (see --help)");
            return 2;
        }
        try {
            return serve(arguments);
        } catch (IOException | IllegalArgumentException e) {
            System.err.println("blockpool-csi: " + e.getMessage());
            return 1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 1;
        } catch (RuntimeException e) {
            e.printStackTrace();
            System.err.println("blockpool-csi: " + (e.getMessage() != null ? e.getMessage() : e.toString()));
            return 1;
        }
    }

    private static int serve(Arguments arguments) throws IOException, InterruptedException {
        DriverConfig config = validate(arguments);
        LogConfigurator.apply(arguments.logFormat(), arguments.logLevel());
        Driver.Running driver;
        try {
            driver = new Driver(config, version()).start();
        } catch (IOException | RuntimeException e) {
            // Logging is set up by now: the reason goes out in the chosen format, where a log collector reads it.
            Logger log = LoggerFactory.getLogger(Main.class);
            if (e instanceof IOException || e instanceof IllegalArgumentException || e instanceof StorageException) {
                log.error("cannot start: {}", e.getMessage());
            } else {
                log.error("cannot start", e);
            }
            return 1;
        }
        Duration grace = Duration.ofSeconds(arguments.shutdownGraceSeconds());
        Runtime.getRuntime().addShutdownHook(new Thread(() -> driver.stop(grace), "shutdown"));
        driver.server().awaitTermination();
        return 0;
    }

    /**
     * gRPC and the Netty inside grpc-netty-shaded read their settings once, when their classes
     * initialise, so they are set before any is used (a -D option still wins). Flight Recorder
     * events are off: the driver records none, and checking for them loads the JFR module at every
     * start. Buffers are allocated per message and freed after it instead of from pooled arenas,
     * which keep what a burst of calls took: a CSI driver's messages are small and few, and its
     * memory after a burst matters more than the allocation cost (docs/performance-memory.md).
     */
    static void configureNetty() {
        System.getProperties().putIfAbsent("io.grpc.netty.shaded.io.netty.jfr.enabled", "false");
        System.getProperties().putIfAbsent("io.grpc.netty.useCustomAllocator", "false");
        System.getProperties().putIfAbsent("io.grpc.netty.shaded.io.netty.allocator.type", "unpooled");
    }

    private static DriverConfig validate(Arguments arguments) throws IOException {
        int maxVolumesPerNode = arguments.maxVolumesPerNode();
        if (maxVolumesPerNode < 1) {
            throw new IllegalArgumentException("--max-volumes-per-node must be at least 1");
        }
        if (arguments.poolScope() == PoolScope.Kind.NODE && arguments.mode() != Mode.ALL) {
            // DeleteVolume looks at this node's mounts, and group snapshots freeze them: one process must do both.
            throw new IllegalArgumentException(
                    "--mode " + arguments.mode().name().toLowerCase(Locale.ROOT)
                            + " cannot serve a node-local pool (--pool-scope node, the default): its controller"
                            + " and node services must run in one process, with --mode all; for one pool every"
                            + " node mounts, add --pool-scope shared");
        }
        if (arguments.peers().isPresent() && arguments.poolScope() != PoolScope.Kind.NODE) {
            // Every node mounts a shared pool: nothing is to be carried between them.
            throw new IllegalArgumentException("--peer-listen serves node-local pools only (--pool-scope node)");
        }
        String node = arguments.nodeId().isPresent() ? arguments.nodeId().get() : hostName();
        if (!Ids.isNodeId(node)) {
            throw new IllegalArgumentException("--node-id " + node
                    + " must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit");
        }
        // Looked at by the driver's start, which does not wait on a pool that does not answer.
        Path pool = arguments.poolDir().toAbsolutePath().normalize();
        return new DriverConfig(
                arguments.endpoint().orElseThrow(),
                node,
                arguments.driverName(),
                pool,
                arguments.mode(),
                maxVolumesPerNode,
                arguments.poolScope(),
                arguments.httpEndpoint(),
                arguments.capacity(),
                arguments.peers(),
                arguments.cgroupRoot());
    }

    /** The kernel's host name: what a node is called, without a DNS lookup that may fail. */
    private static String hostName() throws IOException {
        Path kernel = Path.of("/proc/sys/kernel/hostname");
        return Files.isReadable(kernel)
                ? Files.readString(kernel).strip()
                : InetAddress.getLocalHost().getHostName();
    }

    static String version() {
        return buildProperty("version");
    }

    /** What the build filtered into blockpool.properties: the project version, the CSI spec version. */
    static String buildProperty(String name) {
        try (InputStream in = Main.class.getResourceAsStream("/blockpool.properties")) {
            Properties properties = new Properties();
            properties.load(in);
            return properties.getProperty(name);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** What --version prints: this build's version, the CSI spec it serves and the Java that runs it. */
    static String versionLine() {
        return "blockpool-csi " + version() + " (CSI spec " + buildProperty("csiSpecVersion") + ", Java "
                + Runtime.version() + ")";
    }
}
