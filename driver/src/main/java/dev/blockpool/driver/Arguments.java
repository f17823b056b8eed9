package dev.blockpool.driver;

import dev.blockpool.common.Endpoint;
import dev.blockpool.csi.PoolScope;
import dev.blockpool.driver.logging.LogConfigurator.LogFormat;
import dev.blockpool.driver.logging.LogConfigurator.LogLevel;
import dev.blockpool.metrics.HttpAddress;
import dev.blockpool.peer.MoveCommand;
import dev.blockpool.peer.PeerAddress;
import dev.blockpool.peer.PeerCaCommand;
import dev.blockpool.peer.PeerConfig;
import dev.blockpool.pool.CapacityPolicy;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.DefaultParser;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;
import org.apache.commons.cli.UnrecognizedOptionException;
import org.apache.commons.cli.help.HelpFormatter;

/**
 * The driver's command line: every option, its default and its help, parsed into typed values.
 * A mistake in it is a {@link Usage} error, which {@link Main} reports in one line.
 *
 * <p>Apache Commons CLI parses it rather than picocli: picocli's classes are Java 5 class files,
 * which the JVM's ahead-of-time cache cannot hold, and loading and verifying them from the jar
 * at every start was much of its time to ready (docs/performance-memory.md, "One AOT cache per workload").
 */
record Arguments(
        Optional<Endpoint> endpoint,
        Optional<String> nodeId,
        String driverName,
        Path poolDir,
        Mode mode,
        int maxVolumesPerNode,
        LogLevel logLevel,
        LogFormat logFormat,
        int shutdownGraceSeconds,
        Optional<HttpAddress> httpEndpoint,
        Action action,
        PoolScope.Kind poolScope,
        CapacityPolicy capacity,
        Optional<PeerConfig> peers,
        Path cgroupRoot) {

    /** What the command line asks for: the driver, or only its help or version (help first, when both are asked). */
    enum Action {
        SERVE,
        HELP,
        VERSION
    }

    /** A mistake on the command line, said in words that name the option. */
    static final class Usage extends Exception {
        Usage(String message) {
            super(message);
        }
    }

    private static final String COMMAND = "blockpool-csi";
    private static final String DESCRIPTION =
            "CSI driver serving block volumes carved from a pool of image files, attached as loop devices.";
    private static final String FOOTER = COMMAND + " " + Main.FLEXVOLUME + " <operation> [arguments]: kubelet's "
            + "FlexVolume call convention, a client of the node plugin at $CSI_ENDPOINT (docs/flexvolume.md). "
            + COMMAND + " " + PeerCaCommand.NAME + " --out DIR | --secret NAMESPACE/NAME: makes the peer channel's "
            + "cluster CA in a directory, or in a Secret unless it exists (docs/peers.md). "
            + COMMAND + " " + MoveCommand.NAME + " --help: moves a volume from another node's pool (docs/moving.md).";

    private static final Option ENDPOINT = valued(
            "endpoint", "ENDPOINT", "CSI endpoint: unix:///path/to/csi.sock or a plain path (default: $CSI_ENDPOINT).");
    private static final Option NODE_ID = valued("node-id", "ID", "This node's ID (default: the host name).");
    private static final Option DRIVER_NAME =
            valued("driver-name", "NAME", "CSI driver name (default: blockpool.csi.dev).");
    private static final Option POOL_DIR =
            valued("pool-dir", "DIR", "Directory of the storage pool (default: /var/lib/blockpool).");
    private static final Option MODE =
            valued("mode", "MODE", "Services to serve besides Identity: controller, node or all (default: all).");
    private static final Option POOL_SCOPE = valued(
            "pool-scope",
            "SCOPE",
            "node: the pool is this node's own, its volumes pinned here by topology; shared: one pool every node "
                    + "mounts (NFS, GlusterFS) (default: node).");
    private static final Option MAX_VOLUMES =
            valued("max-volumes-per-node", "N", "Volumes this node can have attached at once (default: 64).");
    private static final Option OVERCOMMIT = valued(
            "overcommit-ratio",
            "RATIO",
            "How many times its filesystem's size the pool may promise to volumes and snapshots; above 1, writes "
                    + "into sparse volumes can fill it (default: 1, no over-commit).");
    private static final Option RESERVE = valued(
            "pool-reserve",
            "AMOUNT",
            "What the pool never promises, kept for its records: a percentage of its size or bytes, e.g. 2% or 1Gi "
                    + "(default: 1%).");
    private static final Option WARN_FREE = valued(
            "pool-warn-free",
            "AMOUNT",
            "Below this much free space an over-committed pool reports PoolNearlyFull in health and logs an error "
                    + "(default: 10%).");
    private static final Option LOG_LEVEL = valued("log-level", "LEVEL", "error, warn, info or debug (default: info).");
    private static final Option LOG_FORMAT = valued(
            "log-format", "FORMAT", "text, or json: one JSON object per line for a log collector (default: text).");
    private static final Option HTTP_ENDPOINT = valued(
            "http-endpoint",
            "HOST:PORT",
            "Serve Prometheus metrics at /metrics on this address, e.g. :8080 (default: empty, not served).");
    private static final Option PEER_LISTEN = valued(
            "peer-listen",
            "HOST:PORT",
            "Serve this node's volumes and snapshots to the other blockpool node plugins on this address, over "
                    + "mutual TLS, e.g. :9810, so that a restore or clone on another node pulls them (node-local pools "
                    + "only; default: empty, not served).");
    private static final Option PEER_CA_DIR = valued(
            "peer-ca-dir",
            "DIR",
            "The peer channel's cluster CA: ca.crt and ca.key, as '" + "blockpool-csi " + PeerCaCommand.NAME
                    + "' makes them (default: " + PeerConfig.DEFAULT_CA_DIR + ").");
    private static final Option PEER = valued(
            "peer",
            "NODE=HOST:PORT",
            "Where another node's driver serves the peer channel; repeat for each node. Without it, the other "
                    + "nodes' drivers are found through the Kubernetes API.");
    private static final Option PEER_SELECTOR = valued(
            "peer-selector",
            "SELECTOR",
            "Without --peer: the label selector of the node plugin's pods in the driver's own namespace, each "
                    + "Running one reached at its pod IP and the --peer-listen port (default: "
                    + PeerConfig.DEFAULT_POD_SELECTOR + ").");
    private static final Option PEER_BANDWIDTH = valued(
            "peer-bandwidth",
            "BYTES",
            "The most bytes per second this node serves to the others, e.g. 100Mi (default: 0, no limit).");
    private static final Option CGROUP_ROOT = valued(
            "cgroup-root",
            "DIR",
            "Where the host's cgroup filesystems are mounted, in which the node limits the I/O of the pods a volume "
                    + "with I/O limits is published to (default: /sys/fs/cgroup).");
    /** Below kubelet's default 30 s termination grace, so the socket is removed before SIGKILL; not in the help. */
    private static final Option SHUTDOWN_GRACE = valued(
            "shutdown-grace",
            "SECONDS",
            "How long SIGTERM waits for in-flight calls and background work (default: 25).");

    private static final Option HELP = Option.builder("h")
            .longOpt("help")
            .desc("Show this help message and exit.")
            .get();
    private static final Option VERSION = Option.builder("V")
            .longOpt("version")
            .desc("Print version information and exit.")
            .get();

    private static final List<Option> SHOWN = List.of(
            ENDPOINT,
            NODE_ID,
            DRIVER_NAME,
            POOL_DIR,
            POOL_SCOPE,
            MODE,
            MAX_VOLUMES,
            OVERCOMMIT,
            RESERVE,
            WARN_FREE,
            LOG_LEVEL,
            LOG_FORMAT,
            HTTP_ENDPOINT,
            PEER_LISTEN,
            PEER_CA_DIR,
            PEER,
            PEER_SELECTOR,
            PEER_BANDWIDTH,
            CGROUP_ROOT,
            HELP,
            VERSION);

    private static Option valued(String name, String argName, String description) {
        return Option.builder()
                .longOpt(name)
                .hasArg()
                .argName(argName)
                .desc(description)
                .get();
    }

    private static Options options(boolean withHidden) {
        Options options = new Options();
        SHOWN.forEach(options::addOption);
        if (withHidden) {
            options.addOption(SHUTDOWN_GRACE);
        }
        return options;
    }

    /** The command line {@code args}; {@code environment} supplies CSI_ENDPOINT when --endpoint is not given. */
    static Arguments parse(String[] args, Map<String, String> environment) throws Usage {
        CommandLine line;
        try {
            line = DefaultParser.builder().setAllowPartialMatching(false).get().parse(options(true), args);
        } catch (UnrecognizedOptionException e) {
            throw new Usage("Unknown option: '" + e.getOption() + "'");
        } catch (ParseException e) {
            throw new Usage(e.getMessage());
        }
        if (!line.getArgList().isEmpty()) {
            throw new Usage("Unmatched argument: '" + line.getArgList().getFirst() + "'");
        }
        for (Option option : line.getOptions()) {
            if (option.hasArg()
                    && !option.getLongOpt().equals(PEER.getLongOpt())
                    && line.getOptionValues(option).length > 1) {
                throw new Usage("option '--" + option.getLongOpt() + "' should be specified only once");
            }
        }
        String httpEndpoint = line.getOptionValue(HTTP_ENDPOINT, "");
        Optional<String> endpoint = Optional.ofNullable(line.getOptionValue(ENDPOINT))
                .or(() -> Optional.ofNullable(environment.get("CSI_ENDPOINT")).filter(v -> !v.isEmpty()));
        return new Arguments(
                endpoint.isPresent()
                        ? Optional.of(convert(ENDPOINT, endpoint.get(), Endpoint::parse))
                        : Optional.empty(),
                Optional.ofNullable(line.getOptionValue(NODE_ID)),
                line.getOptionValue(DRIVER_NAME, "blockpool.csi.dev"),
                convert(POOL_DIR, line.getOptionValue(POOL_DIR, "/var/lib/blockpool"), Path::of),
                oneOf(MODE, line.getOptionValue(MODE, "all"), Mode.class),
                integer(MAX_VOLUMES, line.getOptionValue(MAX_VOLUMES, "64")),
                oneOf(LOG_LEVEL, line.getOptionValue(LOG_LEVEL, "info"), LogLevel.class),
                oneOf(LOG_FORMAT, line.getOptionValue(LOG_FORMAT, "text"), LogFormat.class),
                integer(SHUTDOWN_GRACE, line.getOptionValue(SHUTDOWN_GRACE, "25")),
                httpEndpoint.isEmpty()
                        ? Optional.empty()
                        : Optional.of(convert(HTTP_ENDPOINT, httpEndpoint, HttpAddress::parse)),
                line.hasOption(HELP) ? Action.HELP : line.hasOption(VERSION) ? Action.VERSION : Action.SERVE,
                oneOf(POOL_SCOPE, line.getOptionValue(POOL_SCOPE, "node"), PoolScope.Kind.class),
                capacity(line),
                peers(line),
                convert(CGROUP_ROOT, line.getOptionValue(CGROUP_ROOT, "/sys/fs/cgroup"), Path::of));
    }

    /** The peer channel, when --peer-listen asks for it; its other options alone are a mistake. */
    private static Optional<PeerConfig> peers(CommandLine line) throws Usage {
        String listen = line.getOptionValue(PEER_LISTEN, "");
        if (listen.isEmpty()) {
            for (Option option : List.of(PEER_CA_DIR, PEER, PEER_SELECTOR, PEER_BANDWIDTH)) {
                if (line.hasOption(option)) {
                    throw new Usage("option '--" + option.getLongOpt() + "' needs --" + PEER_LISTEN.getLongOpt());
                }
            }
            return Optional.empty();
        }
        HttpAddress address = convert(PEER_LISTEN, listen, HttpAddress::parse);
        if (address.port() == 0) {
            throw invalid(PEER_LISTEN, listen, "the other nodes need a fixed port, e.g. :9810");
        }
        List<PeerAddress> peers = new ArrayList<>();
        for (String peer : Optional.ofNullable(line.getOptionValues(PEER)).orElse(new String[0])) {
            peers.add(convert(PEER, peer, PeerAddress::parse));
        }
        if (!peers.isEmpty() && line.hasOption(PEER_SELECTOR)) {
            throw new Usage("option '--" + PEER_SELECTOR.getLongOpt() + "' finds the other nodes in Kubernetes, '--"
                    + PEER.getLongOpt() + "' names them: give one of the two");
        }
        String bandwidth = line.getOptionValue(PEER_BANDWIDTH, "0");
        Path caDir = convert(PEER_CA_DIR, line.getOptionValue(PEER_CA_DIR, PeerConfig.DEFAULT_CA_DIR), Path::of);
        try {
            return Optional.of(new PeerConfig(
                    address,
                    caDir,
                    convert(PEER_BANDWIDTH, bandwidth, PeerConfig::parseBandwidth),
                    peers,
                    line.getOptionValue(PEER_SELECTOR, PeerConfig.DEFAULT_POD_SELECTOR)));
        } catch (IllegalArgumentException e) {
            throw new Usage("Invalid peer channel: " + e.getMessage());
        }
    }

    private static CapacityPolicy capacity(CommandLine line) throws Usage {
        CapacityPolicy defaults = CapacityPolicy.DEFAULT;
        String ratio = line.getOptionValue(OVERCOMMIT, Double.toString(defaults.overcommitRatio()));
        double overcommit = convert(OVERCOMMIT, ratio, value -> {
            try {
                double parsed = Double.parseDouble(value);
                if (!(parsed >= 1.0 && parsed <= 100.0)) {
                    throw new IllegalArgumentException("a ratio from 1 (no over-commit) to 100");
                }
                return parsed;
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("a ratio from 1 (no over-commit) to 100");
            }
        });
        return new CapacityPolicy(
                overcommit,
                line.hasOption(RESERVE)
                        ? convert(RESERVE, line.getOptionValue(RESERVE), CapacityPolicy.Amount::parse)
                        : defaults.reserve(),
                line.hasOption(WARN_FREE)
                        ? convert(WARN_FREE, line.getOptionValue(WARN_FREE), CapacityPolicy.Amount::parse)
                        : defaults.warnBelow());
    }

    /** The help, on standard output: usage, options in the order above, and the FlexVolume entry. */
    static void printHelp() {
        HelpFormatter help = HelpFormatter.builder()
                .setShowSince(false)
                .setComparator((a, b) -> 0)
                .get();
        try {
            help.printHelp(COMMAND, DESCRIPTION, options(false), FOOTER, true);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static <T> T convert(Option option, String value, Function<String, T> parse) throws Usage {
        try {
            return parse.apply(value);
        } catch (IllegalArgumentException e) {
            throw invalid(option, value, e.getMessage());
        }
    }

    private static int integer(Option option, String value) throws Usage {
        try {
            return Integer.parseInt(value);
        } catch (NumberFormatException e) {
            throw invalid(option, value, "not a whole number");
        }
    }

    /** A value of {@code type}, named in any case. */
    private static <E extends Enum<E>> E oneOf(Option option, String value, Class<E> type) throws Usage {
        try {
            return Enum.valueOf(type, value.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw invalid(
                    option,
                    value,
                    "expected one of "
                            + Arrays.stream(type.getEnumConstants())
                                    .map(c -> c.name().toLowerCase(Locale.ROOT))
                                    .collect(Collectors.joining(", ")));
        }
    }

    private static Usage invalid(Option option, String value, String why) {
        return new Usage("Invalid value for option '--" + option.getLongOpt() + "': '" + value + "': " + why);
    }
}
