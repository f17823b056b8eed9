package dev.blockpool.peer;

import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.csi.CsiException;
import dev.blockpool.csi.Quantity;
import dev.blockpool.pool.Ids;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.transfer.ImageImports;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.time.Clock;
import java.time.Duration;
import java.util.List;

/**
 * {@code blockpool-csi move}: moves a volume from another node's pool into this node's
 * ({@link VolumeMove}, docs/moving.md). It runs on the destination node beside its driver, as a
 * second process on the same pool, and reaches the source node over the peer channel with a
 * certificate it issues itself from the cluster CA, as the driver does.
 */
public final class MoveCommand {

    public static final String NAME = "move";

    /** Exit code when the source node still uses the volume: stop its workload, then run again. */
    static final int IN_USE_ON_SOURCE = 3;

    static final int DEFAULT_ROUNDS = 10;
    static final String DEFAULT_UNTIL_BELOW = "64Mi";

    static final String USAGE = "usage: blockpool-csi " + NAME
            + " --pool-dir DIR --node-id NODE --peer-ca-dir DIR --from NODE=HOST:PORT --volume ID\n"
            + "                     [--rounds N] [--until-below QUANTITY] | --final\n"
            + "  run on the node the volume moves to, where its driver runs on --pool-dir\n"
            + "  (no step)      copy the volume while its workload runs: rounds of what changed, until one\n"
            + "                 copies less than --until-below (default " + DEFAULT_UNTIL_BELOW + ") or after --rounds"
            + " (default " + DEFAULT_ROUNDS + ")\n"
            + "  --final        once the workload is stopped: a last round, the volume committed on this node,\n"
            + "                 deleted on the source node\n"
            + "  exit codes: 0 done, 1 failed (run it again once the cause is fixed), 2 usage,\n"
            + "              " + IN_USE_ON_SOURCE
            + " the volume is still in use on the source node (stop its workload)";

    private final PrintStream out;
    private final PrintStream err;

    MoveCommand(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    /** Runs the command with the arguments after {@code move}; the process's exit code. */
    public static int run(String[] args) {
        return new MoveCommand(System.out, System.err).execute(List.of(args));
    }

    /** What the command line asks. */
    record Request(
            Path poolDir,
            String nodeId,
            Path caDir,
            PeerAddress from,
            String volumeId,
            boolean last,
            int rounds,
            long untilBelowBytes) {}

    int execute(List<String> args) {
        Request request;
        try {
            request = parse(args);
        } catch (IllegalArgumentException e) {
            err.println("blockpool-csi " + NAME + ": " + e.getMessage());
            err.println(USAGE);
            return 2;
        }
        if (request == null) {
            out.println(USAGE);
            return 0;
        }
        try {
            return move(request);
        } catch (VolumeMove.InUseOnSource e) {
            err.println("blockpool-csi " + NAME + ": " + e.getMessage());
            return IN_USE_ON_SOURCE;
        } catch (RuntimeException e) {
            // StorageException and CsiException say what failed in words; anything else at least its message
            String reason = e.getMessage() != null ? e.getMessage() : "an unexpected failure (" + e + ")";
            err.println("blockpool-csi " + NAME + ": " + reason
                    + "; the move stands where it was: run the same command again once the cause is fixed");
            return 1;
        }
    }

    private int move(Request request) {
        if (!Files.isDirectory(request.poolDir().resolve("volumes"))) {
            throw new IllegalArgumentException(request.poolDir() + " is not a blockpool pool (it has no volumes/)");
        }
        NodeCertificates certificates;
        try {
            certificates = NodeCertificates.issue(request.caDir(), request.nodeId());
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalArgumentException(
                    "cannot issue this node's peer certificate from the CA in " + request.caDir() + ": "
                            + e.getMessage(),
                    e);
        }
        // A second process on the pool: the records' flocks order it with the driver's writes.
        Pool pool = Pool.open(request.poolDir(), new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO);
        try (certificates;
                PeerClient peers = new PeerClient(certificates, PeerDirectory.of(List.of(request.from())))) {
            VolumeMove move = new VolumeMove(
                    pool,
                    new ImageImports(pool),
                    peers,
                    request.from().node(),
                    request.nodeId(),
                    request.volumeId(),
                    out);
            if (request.last()) {
                move.finish();
            } else {
                int made = move.copy(request.rounds(), request.untilBelowBytes());
                out.printf(
                        "copied volume %s in %d round(s); copy again, or stop its workload and run with --final%n",
                        request.volumeId(), made);
            }
            return 0;
        }
    }

    /** The request; null for help. IllegalArgumentException, in words for the operator, for a mistake. */
    static Request parse(List<String> args) {
        Path poolDir = null;
        String nodeId = null;
        Path caDir = null;
        PeerAddress from = null;
        String volumeId = null;
        boolean last = false;
        Integer rounds = null;
        Long untilBelow = null;
        for (int i = 0; i < args.size(); i++) {
            String arg = args.get(i);
            if (arg.equals("-h") || arg.equals("--help")) {
                return null;
            }
            if (arg.equals("--final")) {
                last = true;
                continue;
            }
            if (i + 1 == args.size()) {
                throw new IllegalArgumentException(arg + " needs a value, or is unknown");
            }
            String value = args.get(++i);
            switch (arg) {
                case "--pool-dir" -> poolDir = Path.of(value);
                case "--node-id" -> nodeId = value;
                case "--peer-ca-dir" -> caDir = Path.of(value);
                case "--from" -> from = PeerAddress.parse(value);
                case "--volume" -> volumeId = value;
                case "--rounds" -> rounds = positive(arg, value);
                case "--until-below" -> untilBelow = bytes(arg, value);
                default -> throw new IllegalArgumentException("unknown argument " + arg);
            }
        }
        if (poolDir == null || nodeId == null || caDir == null || from == null || volumeId == null) {
            throw new IllegalArgumentException(
                    "--pool-dir, --node-id, --peer-ca-dir, --from and --volume are required");
        }
        if (!Ids.isNodeId(nodeId)) {
            throw new IllegalArgumentException(nodeId + " is not a node ID (--node-id: this node's Kubernetes name)");
        }
        if (!Ids.isVolumeId(volumeId)) {
            throw new IllegalArgumentException(volumeId + " is not a volume ID of this driver (vol-...)");
        }
        if (from.node().equals(nodeId)) {
            throw new IllegalArgumentException("--from names this node, " + nodeId + ": a volume moves between two");
        }
        if (last && (rounds != null || untilBelow != null)) {
            throw new IllegalArgumentException("--final takes neither --rounds nor --until-below");
        }
        return new Request(
                poolDir,
                nodeId,
                caDir,
                from,
                volumeId,
                last,
                rounds != null ? rounds : DEFAULT_ROUNDS,
                untilBelow != null ? untilBelow : bytes("--until-below", DEFAULT_UNTIL_BELOW));
    }

    private static int positive(String option, String value) {
        try {
            int parsed = Integer.parseInt(value);
            if (parsed >= 1) {
                return parsed;
            }
        } catch (NumberFormatException e) {
            // said below
        }
        throw new IllegalArgumentException(option + " takes a number of at least 1, not " + value);
    }

    private static long bytes(String option, String value) {
        try {
            return Quantity.parseBytes(option, value);
        } catch (CsiException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
    }
}
