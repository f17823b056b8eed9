package dev.blockpool.flexvolume;

import dev.blockpool.common.Endpoint;
import dev.blockpool.common.Quoting;
import dev.blockpool.host.mounts.MountTable;
import dev.blockpool.host.mounts.ProcMountTable;
import io.grpc.netty.shaded.io.netty.util.internal.logging.InternalLoggerFactory;
import io.grpc.netty.shaded.io.netty.util.internal.logging.JdkLoggerFactory;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.logging.Level;
import java.util.logging.LogManager;
import java.util.logging.Logger;

/**
 * kubelet's FlexVolume call convention ({@code <driver> <operation> [arguments]}, one JSON answer
 * on stdout) over the running node plugin's CSI socket. It does no storage work of its own:
 * {@code mount <dir> <options>} is NodeStageVolume into the {@link StagingArea} and
 * NodePublishVolume into kubelet's directory; {@code unmount <dir>} finds the volume from the mount
 * table, unpublishes it and unstages it once nothing else uses it. {@code init} says that attach is
 * not offered (see {@link Answer#initialized}); every other operation is "Not supported", which
 * kubelet remembers and then does without.
 *
 * <p>The socket is {@code $CSI_ENDPOINT} when set, else where the node DaemonSet puts it on the host.
 */
public final class FlexVolume {

    /**
     * The node DaemonSet's plugin directory on the host and the socket's name in it (sidecars-deploy/base/node.yaml).
     */
    public static final Path DEFAULT_SOCKET = Path.of("/var/lib/kubelet/plugins/blockpool.csi.dev/csi.sock");

    private final Path socket;
    private final StagingArea area;

    FlexVolume(Path socket, MountTable table) {
        this.socket = socket;
        this.area = new StagingArea(socket, table);
    }

    /**
     * The process's entry: kubelet reads stdout and stderr together as the answer, so nothing but
     * the answer may be written to either. grpc-java and Netty log through java.util.logging,
     * which is switched off, and anything else writing to System.out or System.err writes nowhere.
     */
    public static int runAlone(List<String> args) {
        return runAlone(args, System.getenv(), System.out);
    }

    /**
     * {@link #runAlone(List)} with the answer on {@code out} and the socket from {@code env}: what
     * the JVM's ahead-of-time cache of this entry point is recorded from (the driver's AotTraining).
     */
    public static int runAlone(List<String> args, Map<String, String> env, PrintStream out) {
        LogManager.getLogManager().reset();
        Logger.getLogger("").setLevel(Level.OFF);
        InternalLoggerFactory.setDefaultFactory(JdkLoggerFactory.INSTANCE);
        PrintStream nowhere = new PrintStream(OutputStream.nullOutputStream());
        System.setOut(nowhere);
        System.setErr(nowhere);
        return run(args, env, out);
    }

    /** Answers the call on {@code out} in one line and returns the exit status; never throws. */
    public static int run(List<String> args, Map<String, String> env, PrintStream out) {
        Answer answer;
        try {
            answer = new FlexVolume(socket(env), new ProcMountTable()).answer(args);
        } catch (FlexFailure e) {
            answer = Answer.failure(e.getMessage());
        } catch (RuntimeException | LinkageError e) {
            answer = Answer.failure("internal error of blockpool's FlexVolume driver: "
                    + Optional.ofNullable(e.getMessage()).orElse("no detail"));
        }
        out.println(answer.toJson());
        out.flush();
        return answer.exitStatus();
    }

    static Path socket(Map<String, String> env) {
        String endpoint = env.getOrDefault("CSI_ENDPOINT", "");
        if (endpoint.isBlank()) {
            return DEFAULT_SOCKET;
        }
        try {
            return Endpoint.parse(endpoint).socketPath();
        } catch (IllegalArgumentException e) {
            throw new FlexFailure("CSI_ENDPOINT: %s", e.getMessage());
        }
    }

    Answer answer(List<String> args) {
        if (args.isEmpty()) {
            throw new FlexFailure("no operation given: kubelet runs the driver as <driver> init, mount <dir> <options> "
                    + "or unmount <dir>");
        }
        String operation = args.getFirst();
        List<String> arguments = args.subList(1, args.size());
        return switch (operation) {
            case "init" -> {
                expect(operation, arguments, 0, "none");
                yield Answer.initialized();
            }
            case "mount" -> {
                expect(operation, arguments, 2, "<mount dir> <json options>");
                yield mount(directory(arguments.get(0)), FlexOptions.parse(arguments.get(1)));
            }
            case "unmount" -> {
                expect(operation, arguments, 1, "<mount dir>");
                yield unmount(directory(arguments.get(0)));
            }
            default -> Answer.notSupported(operation);
        };
    }

    private Answer mount(Path target, FlexOptions options) {
        String volumeId = options.volumeId();
        Path staging = area.stagingOf(volumeId);
        if (!Files.exists(socket)) {
            throw new FlexFailure(
                    "no blockpool node plugin socket at %s: is the node DaemonSet running on this node?", socket);
        }
        return locked(node -> {
            try {
                node.stage(volumeId, staging, options);
                node.publish(volumeId, staging, target, options);
            } catch (FlexFailure e) {
                // Nothing of a failed mount is left staged, unless another pod uses it.
                try {
                    releaseIfUnused(node, volumeId);
                } catch (FlexFailure cleanup) {
                    e.addSuppressed(cleanup);
                }
                throw e;
            }
            return Answer.success(
                    "volume " + volumeId + " is mounted at " + target + (options.readOnly() ? " read-only" : ""));
        });
    }

    /**
     * Unpublishes the volume mounted at {@code target} and unstages it when it was the last user.
     * Any other staged volume that nothing uses any more is unstaged too: that is what is left when
     * an unmount ended between its unpublish and its unstage, and kubelet's retry of it finds
     * nothing mounted at the target.
     */
    private Answer unmount(Path target) {
        String nothing = "nothing of blockpool is mounted at " + target;
        if (area.volumeMountedAt(target).isEmpty() && area.stagedVolumes().isEmpty()) {
            return Answer.success(nothing); // and nothing to ask the plugin about
        }
        return locked(node -> {
            Optional<String> volume = area.volumeMountedAt(target);
            if (volume.isPresent()) {
                node.unpublish(volume.get(), target);
                releaseIfUnused(node, volume.get());
            }
            List<String> left = new ArrayList<>();
            for (String other : area.stagedVolumes()) {
                if (volume.isEmpty() || !other.equals(volume.get())) {
                    try {
                        releaseIfUnused(node, other);
                    } catch (FlexFailure e) {
                        left.add(e.getMessage());
                    }
                }
            }
            String done = volume.map(id -> "volume " + id + " is unmounted from " + target)
                    .orElse(nothing);
            return Answer.success(left.isEmpty() ? done : done + "; still staged: " + String.join("; ", left));
        });
    }

    /** {@code work} with the staging area held and a client of the node plugin. */
    private Answer locked(Function<NodeClient, Answer> work) {
        try (FileChannel _ = area.lock();
                NodeClient node = new NodeClient(socket)) {
            return work.apply(node);
        } catch (IOException e) {
            throw new FlexFailure("cannot release the lock of %s: %s", area.root(), e.getMessage());
        }
    }

    private void releaseIfUnused(NodeClient node, String volumeId) {
        if (!area.inUse(volumeId)) {
            node.unstage(volumeId, area.stagingOf(volumeId));
            area.removeStagingDirectory(volumeId);
        }
    }

    private static void expect(String operation, List<String> arguments, int wanted, String usage) {
        if (arguments.size() != wanted) {
            throw new FlexFailure(
                    "%s takes %d argument%s (%s), not %d",
                    operation, wanted, wanted == 1 ? "" : "s", usage, arguments.size());
        }
    }

    private static Path directory(String argument) {
        try {
            Path path = Path.of(argument);
            if (path.isAbsolute()) {
                return path.normalize();
            }
        } catch (InvalidPathException e) {
            // refused below, with the argument
        }
        throw new FlexFailure(
                "mount dir %s is not an absolute path; kubelet passes the pod's volume directory",
                Quoting.quote(argument));
    }
}
