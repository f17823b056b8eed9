package dev.blockpool.systemtest;

import static org.assertj.core.api.Assertions.fail;

import dev.blockpool.common.HostRequirements;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.csi.UnixSocketChannels;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.SecureRandom;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Hostile requests against the real binary on a real pool (root only; skipped with the reason
 * otherwise): at least 10,000 per run ({@code -Dfuzz.requests=N} for more), from a seed that is
 * always printed ({@code -Dfuzz.seed=S} replays it; the default is fixed, {@code -Dfuzz.seed=random}
 * draws one). Passes only if the driver stays up and
 * ready, answers nothing with UNKNOWN or INTERNAL or a Java class name, mounts nothing outside
 * the paths the test asked for, leaves the sentinel tree and the scratch kubelet tree as they
 * were, and after a teardown through the driver leaves no mount and no loop device behind.
 * Meanwhile {@link HttpFuzzer} attacks the driver's metrics endpoint, which must answer a plain
 * scrape again after every round.
 * See {@link Fuzzer} for what each request is and how it is judged.
 */
@NeedsRoot
class FuzzRealHostTest {

    private static final long DEFAULT_SEED = 42;

    private static final int DEFAULT_REQUESTS = 10_000;
    private static final Path TARGET =
            Path.of(System.getProperty("basedir", ".")).resolve("target");

    private Path dir;
    private FuzzTree tree;
    private DriverProcess driver;
    private EventLoopGroup clientLoop;
    private ManagedChannel channel;
    private InetSocketAddress metrics;

    @BeforeEach
    void setUp() throws Exception {
        HostRequirements.assumeRootWithLoopDevices();
        for (String tool : List.of("losetup", "blkid", "mkfs.ext4", "mknod", "mkfifo", "umount")) {
            HostRequirements.assumeCommand(tool);
        }
        dir = Files.createTempDirectory("blockpool-fuzz-").toRealPath();
        tree = new FuzzTree(dir, List.of("fuzz-ext4-a", "fuzz-ext4-b"), List.of("fuzz-block-a", "fuzz-block-b"));
        tree.build();
        // In a directory of the tree: a relative path the driver took for real would land where the test looks.
        metrics = new InetSocketAddress(InetAddress.getLoopbackAddress(), freePort());
        driver = new DriverProcess(tree.driverDir(), "--http-endpoint", "127.0.0.1:" + metrics.getPort())
                .workingDirectory(tree.cwd())
                .start();
        tree.keepSocket();
        clientLoop = UnixSocketChannels.clientLoop();
        // grpc-go, which kubelet and the sidecars use, takes up to 16 MiB of headers: a long message arrives as such.
        channel = UnixSocketChannels.builder(tree.socket(), clientLoop)
                .maxInboundMetadataSize(16 << 20)
                .maxInboundMessageSize(64 << 20)
                .build();
    }

    @AfterEach
    void tearDown() throws Exception {
        if (channel != null) {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        if (clientLoop != null) {
            clientLoop.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        }
        if (driver != null) {
            driver.close();
            if (Files.exists(driver.log())) {
                Files.createDirectories(TARGET);
                Files.copy(driver.log(), TARGET.resolve("fuzz-driver.log"), StandardCopyOption.REPLACE_EXISTING);
            }
        }
        if (tree != null) {
            tree.close();
        }
        if (dir != null) {
            HostView host = new HostView(dir, tree != null ? tree.pool() : dir);
            host.forceCleanUp();
            if (host.ownMounts().isEmpty()) {
                FuzzTree.deleteTree(dir);
            } else {
                System.out.println("fuzz: left " + dir + " in place: still mounted: " + host.ownMounts());
            }
        }
    }

    @Test
    void hostileRequestsLeaveTheDriverUpAndTheHostUntouched() throws Exception {
        // A fixed seed by default, so the test command judges the same requests every run; "random" explores.
        String asked = System.getProperty("fuzz.seed", Long.toString(DEFAULT_SEED));
        long seed = asked.equals("random") ? new SecureRandom().nextLong() : Long.parseLong(asked);
        int requests = Integer.getInteger("fuzz.requests", DEFAULT_REQUESTS);
        System.out.printf(
                "fuzz: seed %d (replay with -Dfuzz.seed=%d), %d requests, test dir %s%n", seed, seed, requests, dir);
        Violations violations = new Violations(dir);
        Fuzzer fuzzer = new Fuzzer(tree, driver, channel, new Random(seed), violations);
        // The metrics endpoint is attacked all the while the CSI calls are: the driver serves both.
        HttpFuzzer http = new HttpFuzzer(metrics, new Random(seed));
        AtomicBoolean fuzzing = new AtomicBoolean(true);
        Thread httpRounds = Thread.ofPlatform().name("fuzz-http").start(() -> http.run(fuzzing::get));
        long start = System.nanoTime();
        try {
            fuzzer.setUp();
            fuzzer.run(requests);
            fuzzing.set(false);
            httpRounds.join();
            http.findings()
                    .forEach(finding ->
                            violations.add(fuzzer.sent(), "metrics endpoint", "GET /metrics", "hostile HTTP", finding));
            fuzzer.checkAlive();
            if (driver.isAlive()) {
                fuzzer.tearDown();
            }
            fuzzer.checkNothingLeft();
        } finally {
            long seconds = (System.nanoTime() - start) / 1_000_000_000;
            String summary = "fuzz: %d requests, seed %d, %d violations, %d s"
                    .formatted(fuzzer.sent(), seed, violations.count(), seconds);
            fuzzing.set(false);
            System.out.print(fuzzer.statistics());
            System.out.print(http.statistics());
            System.out.println("fuzz: " + fuzzer.otherCalls() + " set-up, probe and teardown calls besides");
            if (!violations.isEmpty()) {
                System.out.println(
                        "fuzz: " + violations.classCount() + " classes of violations:" + violations.report());
            }
            System.out.println(summary);
            writeSummary(summary);
        }
        if (!violations.isEmpty()) {
            fail("%d violations in %d classes (seed %d; replay with -Dfuzz.seed=%d):%s"
                    .formatted(violations.count(), violations.classCount(), seed, seed, violations.report()));
        }
        List<String> missed = fuzzer.slotsNotFuzzed();
        if (!fuzzer.stoppedEarly() && requests >= DEFAULT_REQUESTS && !missed.isEmpty()) {
            fail("seed %d: no hostile value reached these string fields: %s".formatted(seed, missed));
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    private static void writeSummary(String line) throws IOException {
        Files.createDirectories(TARGET);
        Files.writeString(
                TARGET.resolve("system-tests-summary.txt"),
                line + "\n",
                StandardOpenOption.CREATE,
                StandardOpenOption.APPEND);
    }
}
