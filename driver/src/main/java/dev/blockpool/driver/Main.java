package dev.blockpool.driver;

import dev.blockpool.common.Endpoint;
import dev.blockpool.common.StorageException;
import dev.blockpool.driver.LogConfigurator.LogFormat;
import dev.blockpool.driver.LogConfigurator.LogLevel;
import dev.blockpool.flexvolume.FlexVolume;
import dev.blockpool.pool.Ids;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Callable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** The {@code blockpool-csi} command line. */
@Command(name = "blockpool-csi", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        sortOptions = false, usageHelpAutoWidth = true,
        description = "CSI driver serving block volumes carved from a pool of image files, attached as loop devices.",
        footer = {"", "blockpool-csi " + Main.FLEXVOLUME + " <operation> [arguments]: kubelet's FlexVolume call "
                + "convention, a client of the node plugin at $CSI_ENDPOINT (docs/deploy.md)."})
public final class Main implements Callable<Integer> {

    @Option(names = "--endpoint", paramLabel = "ENDPOINT", defaultValue = "${env:CSI_ENDPOINT}",
            converter = EndpointConverter.class,
            description = "CSI endpoint: unix:///path/to/csi.sock or a plain path (default: $CSI_ENDPOINT).")
    Endpoint endpoint;

    @Option(names = "--node-id", paramLabel = "ID", description = "This node's ID (default: the host name).")
    String nodeId;

    @Option(names = "--driver-name", paramLabel = "NAME", defaultValue = "blockpool.csi.dev",
            description = "CSI driver name (default: ${DEFAULT-VALUE}).")
    String driverName;

    @Option(names = "--pool-dir", paramLabel = "DIR", defaultValue = "/var/lib/blockpool",
            description = "Directory of the storage pool (default: ${DEFAULT-VALUE}).")
    Path poolDir;

    @Option(names = "--mode", paramLabel = "MODE", defaultValue = "all",
            description = "Services to serve besides Identity: controller, node or all (default: all).")
    Mode mode;

    @Option(names = "--max-volumes-per-node", paramLabel = "N", defaultValue = "64",
            description = "Volumes this node can have attached at once (default: ${DEFAULT-VALUE}).")
    int maxVolumesPerNode;

    @Option(names = "--log-level", paramLabel = "LEVEL", defaultValue = "info",
            description = "error, warn, info or debug (default: info).")
    LogLevel logLevel;

    @Option(names = "--log-format", paramLabel = "FORMAT", defaultValue = "text",
            description = "text, or json: one JSON object per line for a log collector (default: text).")
    LogFormat logFormat;

    /** Below kubelet's default 30 s termination grace, so the socket is removed before SIGKILL. */
    @Option(names = "--shutdown-grace", paramLabel = "SECONDS", defaultValue = "25", hidden = true,
            description = "How long SIGTERM waits for in-flight calls (default: ${DEFAULT-VALUE}).")
    int shutdownGraceSeconds;

    /** The parsed command line, injected by picocli: building its model again costs start-up time. */
    @Spec
    CommandLine.Model.CommandSpec spec;

    /** The FlexVolume entry point: its own argument convention, answered before picocli builds its model. */
    static final String FLEXVOLUME = "flexvolume";

    public static void main(String[] args) {
        System.exit(run(args));
    }

    static int run(String... args) {
        configureNetty();
        if (args.length > 0 && args[0].equals(FLEXVOLUME)) {
            // kubelet runs it for every call and parses all it prints: no picocli, no logback, no server.
            return FlexVolume.runAlone(List.of(args).subList(1, args.length));
        }
        CommandLine commandLine = new CommandLine(new Main()).setCaseInsensitiveEnumValuesAllowed(true);
        commandLine.setParameterExceptionHandler((e, ignored) -> {
            PrintWriter err = e.getCommandLine().getErr();
            err.println("blockpool-csi: " + e.getMessage() + " (see --help)");
            return 2;
        });
        commandLine.setExecutionExceptionHandler((e, cmd, parsed) -> {
            boolean expected = e instanceof IllegalArgumentException || e instanceof IOException;
            if (!expected) {
                e.printStackTrace(cmd.getErr());
            }
            cmd.getErr().println("blockpool-csi: " + (e.getMessage() != null ? e.getMessage() : e.toString()));
            return 1;
        });
        return commandLine.execute(args);
    }

    @Override
    public Integer call() throws Exception {
        DriverConfig config = validate();
        LogConfigurator.apply(logFormat, logLevel);
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
        Duration grace = Duration.ofSeconds(shutdownGraceSeconds);
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
     * memory after a burst matters more than the allocation cost (docs/performance.md).
     */
    static void configureNetty() {
        System.getProperties().putIfAbsent("io.grpc.netty.shaded.io.netty.jfr.enabled", "false");
        System.getProperties().putIfAbsent("io.grpc.netty.useCustomAllocator", "false");
        System.getProperties().putIfAbsent("io.grpc.netty.shaded.io.netty.allocator.type", "unpooled");
    }

    private DriverConfig validate() throws IOException {
        if (endpoint == null) {
            throw new CommandLine.ParameterException(spec.commandLine(),
                    "no endpoint given: pass --endpoint or set CSI_ENDPOINT");
        }
        if (maxVolumesPerNode < 1) {
            throw new IllegalArgumentException("--max-volumes-per-node must be at least 1");
        }
        String node = nodeId != null ? nodeId : hostName();
        if (!Ids.isNodeId(node)) {
            throw new IllegalArgumentException("--node-id " + node
                    + " must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit");
        }
        Path pool = poolDir.toAbsolutePath().normalize();
        try {
            Files.createDirectories(pool);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot create pool directory " + pool + ": " + e.getMessage());
        }
        if (!Files.isDirectory(pool) || !Files.isWritable(pool)) {
            throw new IllegalArgumentException("pool directory " + pool + " is not a writable directory");
        }
        try {
            // The pool's images are then named as the kernel names a loop device's backing file,
            // which LoopSysfs.isBackingFile compares without resolving it again on every node call.
            pool = pool.toRealPath();
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot resolve pool directory " + pool + ": " + e.getMessage());
        }
        return new DriverConfig(endpoint, node, driverName, pool, mode, maxVolumesPerNode);
    }

    /** The kernel's host name: what a node is called, without a DNS lookup that may fail. */
    private static String hostName() throws IOException {
        Path kernel = Path.of("/proc/sys/kernel/hostname");
        return Files.isReadable(kernel) ? Files.readString(kernel).strip() : InetAddress.getLocalHost().getHostName();
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

    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            return new String[] {"blockpool-csi " + version() + " (CSI spec " + buildProperty("csiSpecVersion")
                    + ", Java " + Runtime.version() + ")"};
        }
    }

    static final class EndpointConverter implements CommandLine.ITypeConverter<Endpoint> {
        @Override
        public Endpoint convert(String value) {
            try {
                return Endpoint.parse(value);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException(e.getMessage());
            }
        }
    }
}
