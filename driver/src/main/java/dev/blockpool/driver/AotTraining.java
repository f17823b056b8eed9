package dev.blockpool.driver;

import dev.blockpool.flexvolume.FlexVolume;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The workloads the JVM's ahead-of-time caches are recorded from (JEP 483, 514, 515), one cache
 * per kind of process that {@code bin/blockpool-csi} starts. Each is recorded in a JVM that runs
 * its own side of the work alone, with the other side in a JVM of its own (a child of this one, on
 * the same runtime and jar, recording nothing), so that a cache holds the classes its process
 * loads and no others: every class in a cache is loaded at every start that uses it.
 * <ul>
 * <li>{@code driver}, for {@code blockpool-csi.aot}: this JVM runs the driver's own command line
 * in {@code all} mode on a scratch pool and socket; a CSI client in the child
 * ({@link AotTrainingClient}) makes the calls a CO makes first, so that the server's classes,
 * their linking and the early method profiles of those paths are in the cache.
 * <li>{@code flexvolume}, for {@code blockpool-flexvolume.aot}: this JVM answers kubelet's
 * FlexVolume calls as {@code blockpool-csi flexvolume} does (a short-lived gRPC client of the node
 * plugin), against a driver in the child.
 * </ul>
 * Nothing here attaches a loop device or mounts, so it runs unprivileged and inside an image build.
 *
 * <p>Run with the runtime that will run the driver, since a cache only fits the JVM that made it:
 * {@code java @bin/jvm.options -XX:AOTCacheOutput=blockpool-csi.aot -cp blockpool-csi.jar
 * dev.blockpool.driver.AotTraining driver}, and the same with {@code blockpool-flexvolume.aot} and
 * {@code flexvolume}. The build and the image do; {@code bin/blockpool-csi} picks the cache of the
 * sub-command from beside the jar. A cache that is missing or does not fit only costs start-up
 * time: the JVM says so and runs without it.
 */
public final class AotTraining {

    /** The child of the {@code driver} training: the CSI client. */
    static final String CLIENT = "csi-client";
    /** The child of the {@code flexvolume} training: the driver, which says "serving" on stdout once it is. */
    static final String SERVE = "serve";

    private static final String SERVING = "serving";

    private AotTraining() {}

    public static void main(String[] args) throws Exception {
        String role = args.length > 0 ? args[0] : "";
        switch (role) {
            case "driver" -> trainDriver();
            case "flexvolume" -> trainFlexVolume();
            case CLIENT -> System.exit(AotTrainingClient.run(Path.of(args[1]), Path.of(args[2])));
            case SERVE -> serve(Path.of(args[1]));
            default -> {
                System.err.println("usage: AotTraining driver | flexvolume (the cache recorded is this JVM's "
                        + "-XX:AOTCacheOutput)");
                System.exit(2);
            }
        }
    }

    /** Serves in this JVM; the CSI client in the child drives it. */
    private static void trainDriver() throws IOException {
        Path work = Files.createTempDirectory("blockpool-aot-training");
        PrintStream stderr = System.err;
        Thread driver = startDriver(work);
        int status = 1;
        try {
            Process client =
                    child(ProcessBuilder.Redirect.DISCARD, CLIENT, socket(work).toString(), work.toString());
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
            while (!client.waitFor(100, TimeUnit.MILLISECONDS)) {
                if (!driver.isAlive() || System.nanoTime() > deadline) {
                    client.destroyForcibly().waitFor();
                    throw new IllegalStateException(
                            driver.isAlive() ? "the CSI client did not finish within 5 min" : "the driver stopped");
                }
            }
            if (client.exitValue() != 0) {
                throw new IllegalStateException("the CSI client exited with " + client.exitValue());
            }
            status = 0;
        } catch (IOException | RuntimeException | InterruptedException e) {
            stderr.println("blockpool-csi AOT training failed: " + e);
        } finally {
            removeTree(work.resolve("pool"));
        }
        // Exit through the driver's shutdown hook, the way a SIGTERM ends it; the JVM writes the cache on exit.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> removeTree(work)));
        System.exit(status);
    }

    /**
     * Answers FlexVolume calls in this JVM, as kubelet's calls are answered: its answers, and a
     * mount and an unmount through the node plugin in the child that go as far as they can without
     * root (the volume does not exist, nothing is mounted).
     */
    private static void trainFlexVolume() throws IOException, InterruptedException {
        Path work = Files.createTempDirectory("blockpool-aot-training");
        PrintStream stderr = System.err;
        Process driver = null;
        int status = 1;
        try {
            driver = child(ProcessBuilder.Redirect.PIPE, SERVE, work.toString());
            String said = new BufferedReader(new InputStreamReader(driver.getInputStream(), StandardCharsets.UTF_8))
                    .readLine();
            if (!SERVING.equals(said)) {
                throw new IllegalStateException("the driver did not start serving");
            }
            // What Main.run does before it hands a flexvolume call over.
            Main.configureNetty();
            Map<String, String> env = Map.of("CSI_ENDPOINT", "unix://" + socket(work));
            String target = work.resolve("flexvolume-pod").toString();
            for (int round = 0; round < 5; round++) {
                flexVolume(env, "init");
                flexVolume(env, "getvolumename", "{}");
                String answer = flexVolume(
                        env,
                        "mount",
                        target,
                        "{\"volumeID\":\"vol-" + "0".repeat(32)
                                + "\",\"kubernetes.io/fsType\":\"ext4\",\"kubernetes.io/readwrite\":\"rw\"}");
                // The plugin's refusal of a volume it does not have: the call reached it.
                if (!answer.contains("NOT_FOUND")) {
                    throw new IllegalStateException("the FlexVolume mount did not reach the driver: " + answer);
                }
                flexVolume(env, "unmount", target);
            }
            status = 0;
        } catch (IOException | RuntimeException e) {
            stderr.println("blockpool-flexvolume AOT training failed: " + e);
        } finally {
            if (driver != null) {
                driver.getOutputStream().close(); // the end of the training, for the child
                if (!driver.waitFor(30, TimeUnit.SECONDS)) {
                    driver.destroyForcibly().waitFor();
                }
            }
            removeTree(work);
        }
        System.exit(status);
    }

    /** One FlexVolume call, as {@code blockpool-csi flexvolume} answers it; returns the answer. */
    private static String flexVolume(Map<String, String> env, String... args) {
        ByteArrayOutputStream answer = new ByteArrayOutputStream();
        FlexVolume.runAlone(List.of(args), env, new PrintStream(answer, true, StandardCharsets.UTF_8));
        return answer.toString(StandardCharsets.UTF_8);
    }

    /**
     * The {@code flexvolume} training's driver: says {@link #SERVING} on stdout once its socket
     * takes connections, and stops, through its shutdown hook, when the training closes stdin.
     */
    private static void serve(Path work) throws IOException, InterruptedException {
        Thread driver = startDriver(work);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!connects(socket(work))) {
            if (!driver.isAlive() || System.nanoTime() > deadline) {
                System.exit(1);
            }
            Thread.sleep(5);
        }
        System.out.println(SERVING);
        System.out.flush();
        while (System.in.read() != -1) {
            // until the training is done
        }
        System.exit(0);
    }

    private static boolean connects(Path socket) {
        try (SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            channel.connect(UnixDomainSocketAddress.of(socket));
            return true;
        } catch (IOException notYet) {
            return false;
        }
    }

    /** The driver's own command line on a scratch pool, in a thread of this JVM; its log goes nowhere. */
    private static Thread startDriver(Path work) {
        // The driver logs every call at info; the build output needs none of it.
        System.setErr(new PrintStream(OutputStream.nullOutputStream()));
        return Thread.ofPlatform()
                .daemon()
                .start(() -> Main.run(
                        "--endpoint",
                        "unix://" + socket(work),
                        "--pool-dir",
                        work.resolve("pool").toString(),
                        "--node-id",
                        AotTrainingClient.NODE_ID,
                        "--log-level",
                        "info",
                        "--max-volumes-per-node",
                        "8",
                        // Shared: the one scope that serves every call the training makes (ControllerPublish too).
                        "--pool-scope",
                        "shared"));
    }

    private static Path socket(Path work) {
        return work.resolve("csi.sock");
    }

    /**
     * {@code AotTraining role args} in a JVM of its own: this runtime and class path, the options
     * the driver needs to run quietly, no cache. Its stderr is this process's.
     */
    private static Process child(ProcessBuilder.Redirect stdout, String role, String... args) throws IOException {
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--sun-misc-unsafe-memory-access=allow",
                "--enable-native-access=ALL-UNNAMED",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-XX:-UsePerfData",
                "-cp",
                System.getProperty("java.class.path"),
                AotTraining.class.getName(),
                role));
        command.addAll(List.of(args));
        ProcessBuilder builder =
                new ProcessBuilder(command).redirectOutput(stdout).redirectError(ProcessBuilder.Redirect.INHERIT);
        // Options meant for the JVM that records a cache (-XX:AOTCacheOutput in JAVA_TOOL_OPTIONS) are not the child's.
        builder.environment().keySet().removeAll(List.of("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS"));
        return builder.start();
    }

    private static void removeTree(Path root) {
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder())
                    .forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            // a scratch directory under the temp dir; nothing else is at stake
        }
    }
}
