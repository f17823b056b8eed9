package dev.blockpool.peer;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.FileSystemException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.time.Instant;
import java.util.List;

/**
 * {@code blockpool-csi peer-ca --out DIR [--rotate | --switch-key | --retire-old]}: makes the
 * cluster's peer CA, and rotates it in three steps, each once every node has read the files of
 * the step before (docs/peers.md). It never prints a key.
 */
public final class PeerCaCommand {

    public static final String NAME = "peer-ca";

    static final String USAGE = "usage: blockpool-csi " + NAME + " --out DIR [--rotate | --switch-key | --retire-old]\n"
            + "  (no step)     make a new CA in DIR: " + ClusterCa.BUNDLE + " and " + ClusterCa.KEY
            + " (0600); refuses if DIR holds one\n"
            + "  --rotate      add a new CA to " + ClusterCa.BUNDLE + ", its key in " + ClusterCa.NEXT_KEY
            + "; nodes go on signing with the old\n"
            + "  --switch-key  once every node trusts the new CA: nodes sign with its key from now on\n"
            + "  --retire-old  once every node has a certificate of the new CA: drop the old from the bundle";

    private final PrintStream out;
    private final PrintStream err;

    PeerCaCommand(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    /** Runs the command with the arguments after {@code peer-ca}; the process's exit code. */
    public static int run(String[] args) {
        return new PeerCaCommand(System.out, System.err).execute(List.of(args));
    }

    int execute(List<String> args) {
        Path dir = null;
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
        if (dir == null) {
            return usage("--out DIR is required");
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
