package dev.blockpool.peer;

import dev.blockpool.common.StorageException;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.FileSystemException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.time.Instant;
import java.util.List;
import java.util.function.Supplier;

/**
 * {@code blockpool-csi peer-ca --out DIR [--rotate | --switch-key | --retire-old]}: makes the
 * cluster's peer CA, and rotates it in three steps, each once every node has read the files of
 * the step before (docs/peers.md). {@code peer-ca --secret NAMESPACE/NAME}, in a pod: makes the CA
 * in that Secret unless it exists, as the install's Job does. It never prints a key.
 */
public final class PeerCaCommand {

    public static final String NAME = "peer-ca";

    static final String USAGE = "usage: blockpool-csi " + NAME + " --out DIR [--rotate | --switch-key | --retire-old]\n"
            + "       blockpool-csi " + NAME + " --secret NAMESPACE/NAME\n"
            + "  (no step)     make a new CA in DIR: " + ClusterCa.BUNDLE + " and " + ClusterCa.KEY
            + " (0600); refuses if DIR holds one\n"
            + "  --rotate      add a new CA to " + ClusterCa.BUNDLE + ", its key in " + ClusterCa.NEXT_KEY
            + "; nodes go on signing with the old\n"
            + "  --switch-key  once every node trusts the new CA: nodes sign with its key from now on\n"
            + "  --retire-old  once every node has a certificate of the new CA: drop the old from the bundle\n"
            + "  --secret      in a pod: make a new CA in that Secret (keys " + ClusterCa.BUNDLE + ", " + ClusterCa.KEY
            + ") unless it exists; an existing one is left alone";

    private final PrintStream out;
    private final PrintStream err;
    private final Supplier<KubernetesApi> cluster;

    PeerCaCommand(PrintStream out, PrintStream err, Supplier<KubernetesApi> cluster) {
        this.out = out;
        this.err = err;
        this.cluster = cluster;
    }

    /** Runs the command with the arguments after {@code peer-ca}; the process's exit code. */
    public static int run(String[] args) {
        return new PeerCaCommand(
                        System.out,
                        System.err,
                        () -> KubernetesApi.inCluster("make the CA with --out DIR and load it as docs/peers.md shows"))
                .execute(List.of(args));
    }

    int execute(List<String> args) {
        Path dir = null;
        String secret = null;
        String step = null;
        for (int i = 0; i < args.size(); i++) {
            String arg = args.get(i);
            switch (arg) {
                case "--out" -> {
                    if (i + 1 == args.size()) {
                        return usage("--out needs a directory");
                    }
                    dir = Path.of(args.get(++i));
                }
                case "--secret" -> {
                    if (i + 1 == args.size()) {
                        return usage("--secret needs NAMESPACE/NAME");
                    }
                    secret = args.get(++i);
                }
                case "--rotate", "--switch-key", "--retire-old" -> {
                    if (step != null) {
                        return usage("give one step at a time, not " + step + " and " + arg);
                    }
                    step = arg;
                }
                case "-h", "--help" -> {
                    out.println(USAGE);
                    return 0;
                }
                default -> {
                    return usage("unknown argument " + arg);
                }
            }
        }
        if (secret != null) {
            if (dir != null || step != null) {
                return usage("--secret makes a CA only; rotate it on the files with --out DIR (docs/peers.md)");
            }
            return inSecret(secret);
        }
        if (dir == null) {
            return usage("--out DIR or --secret NAMESPACE/NAME is required");
        }
        try {
            if (step == null) {
                ClusterCa.create(dir, Instant.now());
                out.println("made a new peer CA in " + dir + "; load it into the cluster as a Secret (docs/peers.md)");
            } else if (step.equals("--rotate")) {
                ClusterCa.rotate(dir, Instant.now());
                out.println("added a new CA to " + dir.resolve(ClusterCa.BUNDLE) + "; once every node has read it,"
                        + " run " + NAME + " --out " + dir + " --switch-key");
            } else if (step.equals("--switch-key")) {
                ClusterCa.switchKey(dir);
                out.println("nodes sign with the new CA's key once they read " + dir.resolve(ClusterCa.KEY)
                        + "; once every node has, run " + NAME + " --out " + dir + " --retire-old");
            } else {
                int dropped = ClusterCa.retireOld(dir);
                out.println("dropped " + dropped + " old CA certificate(s) from " + dir.resolve(ClusterCa.BUNDLE));
            }
            return 0;
        } catch (IOException | GeneralSecurityException e) {
            err.println("blockpool-csi " + NAME + ": " + describe(e));
            return 1;
        }
    }

    private int inSecret(String value) {
        CaSecret secret;
        try {
            secret = CaSecret.parse(value);
        } catch (IllegalArgumentException e) {
            return usage(e.getMessage());
        }
        try {
            switch (secret.ensure(cluster.get(), Instant.now())) {
                case CREATED -> out.println("made a new peer CA in the Secret " + secret);
                case ALREADY_THERE -> out.println("the Secret " + secret + " is there already; left as it is");
                case CREATED_BY_ANOTHER ->
                    out.println("the Secret " + secret + " was made by another at the same time; left as it is");
            }
            return 0;
        } catch (StorageException | IllegalArgumentException e) {
            err.println("blockpool-csi " + NAME + ": " + e.getMessage());
            return 1;
        }
    }

    private int usage(String problem) {
        err.println("blockpool-csi " + NAME + ": " + problem);
        err.println(USAGE);
        return 2;
    }

    /** The file and what went wrong with it, in words, never an exception's class name. */
    private static String describe(Exception e) {
        if (e instanceof FileSystemException fs) {
            String reason = fs.getReason() != null ? fs.getReason() : "cannot be used";
            return fs.getFile() + ": " + reason;
        }
        return e.getMessage();
    }
}
