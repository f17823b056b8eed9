package dev.blockpool.driver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import csi.v1.ControllerGrpc;
import csi.v1.Csi;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import csi.v1.IdentityGrpc;
import csi.v1.NodeGrpc;
import dev.blockpool.common.Endpoint;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.common.SilentFuseMount;
import dev.blockpool.csi.CsiRequests;
import dev.blockpool.csi.UnixSocketChannels;
import dev.blockpool.driver.logging.CapturedLog;
import dev.blockpool.driver.logging.LogConfigurator.LogFormat;
import dev.blockpool.driver.logging.LogConfigurator.LogLevel;
import dev.blockpool.pool.ReconcileSteps;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A driver started on a pool that does not answer, as an NFS pool whose server is down when the
 * node boots (here a FUSE mount over the pool whose daemon reads nothing): it serves at once,
 * Probe not ready and every call but Identity's answered {@code UNAVAILABLE} before its deadline,
 * both naming the pool; once the pool answers it finishes its start without a restart; stopped
 * before that, it stops at once and nothing of its start goes on.
 */
@NeedsRoot
class PoolThatDoesNotAnswerAtStartRealHostTest {

    /** A sidecar's deadline is 10 s or more, kubelet's 2 min; a short one keeps the test short. */
    private static final long DEADLINE_SECONDS = 4;
    /** kubelet's deadline: how long the first call waits for the socket, and Probe for the driver to be ready. */
    private static final long KUBELET_DEADLINE_SECONDS = 120;

    private static final long MIB = 1 << 20;

    @TempDir
    Path dir;

    private Path pool;
    private SilentFuseMount silent;
    private CapturedLog log;
    private final EventLoopGroup clientLoop = UnixSocketChannels.clientLoop();
    private ManagedChannel channel;
    private CompletableFuture<Driver.Running> starting;

    @BeforeEach
    void startOnASilentPool() throws Exception {
        assumeTrue(SilentFuseMount.available(), "needs root and /dev/fuse");
        pool = Files.createDirectories(dir.resolve("pool"));
        silent = SilentFuseMount.on(pool);
        log = new CapturedLog(LogFormat.TEXT, LogLevel.INFO);
        Driver driver = new Driver(
                new DriverConfig(socket(), "node-1", "blockpool.csi.dev", pool, dev.blockpool.driver.Mode.ALL, 8),
                "test",
                new Driver.Background(Duration.ofDays(1), ReconcileSteps.ALL));
        // on a thread of its own: a start that waits on the pool leaves the test to its calls' deadlines
        starting = new CompletableFuture<>();
        Thread.ofPlatform().daemon().start(() -> {
            try {
                starting.complete(driver.start());
            } catch (Exception | Error e) {
                starting.completeExceptionally(e);
            }
        });
        channel = UnixSocketChannels.channel(socket().socketPath(), clientLoop);
    }

    @AfterEach
    void cleanUp() throws Exception {
        if (channel != null) {
            channel.shutdownNow();
        }
        if (silent != null) {
            silent.close(); // what still waits on the pool fails, and the pool is the directory again
        }
        if (starting != null) {
            // a start that hung on the pool fails once it answers; one that returned is stopped
            Driver.Running running =
                    starting.handle((started, failure) -> started).get();
            if (running != null) {
                running.stop(Duration.ofSeconds(10));
            }
        }
        if (log != null) {
            log.close();
        }
        clientLoop.shutdownGracefully();
    }

    @Test
    void aDriverStartedOnASilentPoolServesAndFinishesItsStartOnceThePoolAnswers() throws Exception {
        assertIdentityAnswersAndTheRestWaitsForThePool();

        silent.close(); // the pool answers
        silent = null;
        awaitReady();

        // no deadline of the test's own from here: the pool answers
        ControllerGrpc.ControllerBlockingStub controller = ControllerGrpc.newBlockingStub(channel);
        String volume = controller
                .createVolume(CsiRequests.createVolume("after", 32 * MIB, CsiRequests.mount(Mode.SINGLE_NODE_WRITER))
                        .build())
                .getVolume()
                .getVolumeId();
        assertThat(NodeGrpc.newBlockingStub(channel)
                        .nodeGetInfo(Csi.NodeGetInfoRequest.getDefaultInstance())
                        .getNodeId())
                .isEqualTo("node-1");
        controller.deleteVolume(
                Csi.DeleteVolumeRequest.newBuilder().setVolumeId(volume).build());
        assertThat(pool.resolve("nodes/node-1.json"))
                .as("the node registered, as at every start")
                .exists();

        Driver.Running running = starting.get();
        starting = null;
        running.stop(Duration.ofSeconds(10));
        assertThat(running.backgroundEnded()).isTrue();
        assertThat(socket().socketPath()).doesNotExist();
    }

    @Test
    void aDriverStoppedWhileItsPoolDoesNotAnswerStopsAndNothingOfItsStartGoesOn() throws Exception {
        assertIdentityAnswersAndTheRestWaitsForThePool();
        Driver.Running running = starting.get();
        starting = null;

        running.stop(Duration.ofSeconds(10));
        assertThat(socket().socketPath()).doesNotExist();

        silent.close(); // the pool answers after the stop
        silent = null;
        running.opening().awaitEnded();
        assertThat(running.backgroundEnded()).isTrue();
        try (Stream<Path> files = Files.list(pool)) {
            assertThat(files).as("what the start would have made in the pool").isEmpty();
        }
        assertThat(log.text()).doesNotContain("serving all on");
    }

    /** Identity at once, Probe not ready, a Controller and a Node call UNAVAILABLE within their deadlines. */
    private void assertIdentityAnswersAndTheRestWaitsForThePool() {
        // the first call waits for the socket, as kubelet's registrar does
        assertThat(IdentityGrpc.newBlockingStub(channel)
                        .withWaitForReady()
                        .withDeadlineAfter(KUBELET_DEADLINE_SECONDS, TimeUnit.SECONDS)
                        .getPluginInfo(Csi.GetPluginInfoRequest.getDefaultInstance())
                        .getName())
                .isEqualTo("blockpool.csi.dev");
        assertThat(identity()
                        .getPluginCapabilities(Csi.GetPluginCapabilitiesRequest.getDefaultInstance())
                        .getCapabilitiesList())
                .anyMatch(c -> c.getService().getType() == Csi.PluginCapability.Service.Type.CONTROLLER_SERVICE);
        assertThat(DriversOnOnePool.ready(channel)).as("Probe").isFalse();
        assertThat(log.text())
                .as("why, in the log")
                .contains("not ready: the pool " + pool + " does not answer (since ");

        assertUnavailableNamingThePool(() -> controller()
                .createVolume(Csi.CreateVolumeRequest.newBuilder()
                        .setName("before")
                        .addVolumeCapabilities(CsiRequests.mount(Mode.SINGLE_NODE_WRITER))
                        .build()));
        assertUnavailableNamingThePool(() -> NodeGrpc.newBlockingStub(channel)
                .withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS)
                .nodeGetInfo(Csi.NodeGetInfoRequest.getDefaultInstance()));
    }

    private void assertUnavailableNamingThePool(Runnable call) {
        assertThatThrownBy(call::run).isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
            assertThat(e.getStatus().getCode())
                    .as("answered by the driver before the caller's deadline, a code to retry")
                    .isEqualTo(Status.Code.UNAVAILABLE);
            assertThat(e.getStatus().getDescription()).contains("the pool " + pool + " does not answer");
        });
    }

    /** Probe, asked as the sidecars ask it at their start, until it answers ready. */
    private void awaitReady() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(KUBELET_DEADLINE_SECONDS);
        while (!DriversOnOnePool.ready(channel)) {
            assertThat(System.nanoTime() - deadline)
                    .as("ready within kubelet's deadline")
                    .isNegative();
            Thread.sleep(100);
        }
    }

    private IdentityGrpc.IdentityBlockingStub identity() {
        return IdentityGrpc.newBlockingStub(channel).withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS);
    }

    private ControllerGrpc.ControllerBlockingStub controller() {
        return ControllerGrpc.newBlockingStub(channel).withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS);
    }

    private Endpoint socket() {
        return Endpoint.parse(dir.resolve("driver.sock").toString());
    }
}
