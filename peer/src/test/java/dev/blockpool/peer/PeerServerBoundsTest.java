package dev.blockpool.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import csi.v1.Csi.ControllerModifyVolumeRequest;
import csi.v1.Csi.ControllerModifyVolumeResponse;
import dev.blockpool.peer.v1.LocateRequest;
import dev.blockpool.peer.v1.PeerGrpc;
import dev.blockpool.pool.ContentSource;
import dev.blockpool.pool.transfer.ImageReader;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.InputStream;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** What a client can make a peer server hold, and how fast it serves. */
class PeerServerBoundsTest {

    private static final ContentSource SNAPSHOT = ContentSource.snapshot("snap-1");
    private static final PeerServer.Bounds BOUNDS = PeerServer.Bounds.DEFAULT;

    @RegisterExtension
    final TestPeers peers = new TestPeers();

    private NodeCertificates nodeA;

    @BeforeEach
    void makeNodeA() throws Exception {
        nodeA = peers.certificates("node-a");
    }

    @Test
    void readsArePacedByTheBandwidthLimit() throws Exception {
        FakeClock clock = new FakeClock();
        int chunk = ImageReader.MAX_CHUNK_BYTES;
        FakeExports exports = new FakeExports().holding(SNAPSHOT, new byte[4 * chunk]);
        PeerServer server = peers.server(
                peers.certificates("node-b"),
                exports,
                VolumeModifier.NONE,
                BOUNDS,
                new BandwidthLimit(chunk, clock)); // one chunk a second
        PeerImage image = (PeerImage) peers.client(nodeA, TestPeers.at("node-b", server))
                .open(SNAPSHOT, "transfer-1", Optional.empty())
                .orElseThrow();

        for (int i = 0; i < 4; i++) {
            image.read((long) i * chunk, chunk);
        }

        // the first chunk from the full bucket, each of the others a second later
        assertThat(clock.slept()).containsExactly(seconds(1), seconds(1), seconds(1));
    }

    @Test
    void connectionsBeyondTheBoundAreClosedAsSoonAsAccepted() throws Exception {
        PeerServer server = peers.server(
                peers.certificates("node-b"),
                new FakeExports().holding(SNAPSHOT, new byte[] {1}),
                VolumeModifier.NONE,
                withConnections(2),
                BandwidthLimit.unlimited());
        List<Socket> idle = new ArrayList<>();
        try {
            idle.add(new Socket("127.0.0.1", server.port()));
            idle.add(new Socket("127.0.0.1", server.port()));
            awaitTrue(() -> server.connections() == 2);

            try (Socket third = new Socket("127.0.0.1", server.port())) {
                third.setSoTimeout(10_000);
                try (InputStream in = third.getInputStream()) {
                    assertThat(in.read()).isEqualTo(-1); // closed by the server, unread
                }
            }
            assertThat(server.connections()).isEqualTo(2);

            idle.removeFirst().close();
            awaitTrue(() -> server.connections() == 1);
            assertThat(peers.client(nodeA, TestPeers.at("node-b", server)).open(SNAPSHOT, "transfer-1"))
                    .isPresent();
        } finally {
            for (Socket socket : idle) {
                socket.close();
            }
        }
    }

    @Test
    void aConnectionThatDoesNotFinishItsHandshakeInTimeIsClosed() throws Exception {
        PeerServer server = peers.server(
                peers.certificates("node-b"),
                new FakeExports(),
                VolumeModifier.NONE,
                withHandshake(Duration.ofMillis(100)),
                BandwidthLimit.unlimited());

        try (Socket silent = new Socket("127.0.0.1", server.port())) {
            silent.setSoTimeout(10_000); // far beyond the handshake's bound
            try (InputStream in = silent.getInputStream()) {
                assertThat(in.read()).isEqualTo(-1);
            }
        }
        awaitTrue(() -> server.connections() == 0);
    }

    @Test
    void anOversizedRequestIsRefusedAndTheNextCallServed() throws Exception {
        PeerServer server = peers.server(
                peers.certificates("node-b"),
                new FakeExports().holding(SNAPSHOT, new byte[] {1}),
                request -> ControllerModifyVolumeResponse.getDefaultInstance(),
                BOUNDS,
                BandwidthLimit.unlimited());
        PeerClient client = peers.client(nodeA, TestPeers.at("node-b", server));
        PeerGrpc.PeerBlockingStub stub = client.stub(TestPeers.at("node-b", server));
        ControllerModifyVolumeRequest oversized = ControllerModifyVolumeRequest.newBuilder()
                .setVolumeId("vol-1")
                .putMutableParams("allocation", "x".repeat(BOUNDS.requestBytes()))
                .build();

        assertThatThrownBy(() -> stub.modifyVolume(oversized))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED));
        assertThat(stub.locate(LocateRequest.newBuilder()
                                .setSource(Wire.source(SNAPSHOT))
                                .build())
                        .getFound())
                .isTrue();
    }

    @Test
    void aCallFindingEveryThreadBusyIsRefusedAtOnce() throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        PeerServer server = peers.server(
                peers.certificates("node-b"),
                new FakeExports().holding(SNAPSHOT, new byte[] {1}),
                request -> {
                    started.countDown();
                    await(finish);
                    return ControllerModifyVolumeResponse.getDefaultInstance();
                },
                withThreads(1),
                BandwidthLimit.unlimited());
        PeerGrpc.PeerBlockingStub stub =
                peers.client(nodeA, TestPeers.at("node-b", server)).stub(TestPeers.at("node-b", server));
        ExecutorService background = Executors.newSingleThreadExecutor();
        try {
            Future<?> holding = background.submit(() -> stub.modifyVolume(modify("vol-1")));
            started.await();

            assertThatThrownBy(() -> stub.locate(LocateRequest.newBuilder()
                            .setSource(Wire.source(SNAPSHOT))
                            .build()))
                    .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                        assertThat(e.getStatus().getDescription()).contains("retry shortly");
                    });

            finish.countDown();
            holding.get(10, TimeUnit.SECONDS);
        } finally {
            finish.countDown();
            background.shutdownNow();
        }
    }

    @Test
    void aCallNotDoneByTheServersDeadlineIsAnsweredRetryLater() throws Exception {
        CountDownLatch never = new CountDownLatch(1);
        CountDownLatch interrupted = new CountDownLatch(1);
        PeerServer server = peers.server(
                peers.certificates("node-b"),
                new FakeExports(),
                request -> {
                    try {
                        never.await();
                    } catch (InterruptedException e) {
                        interrupted.countDown();
                    }
                    return ControllerModifyVolumeResponse.getDefaultInstance();
                },
                withCallDeadline(Duration.ofMillis(200)),
                BandwidthLimit.unlimited());
        PeerGrpc.PeerBlockingStub stub =
                peers.client(nodeA, TestPeers.at("node-b", server)).stub(TestPeers.at("node-b", server));

        assertThatThrownBy(() -> stub.modifyVolume(modify("vol-1")))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
                    assertThat(e.getStatus().getDescription()).contains("did not finish");
                });
        assertThat(interrupted.await(10, TimeUnit.SECONDS)).isTrue(); // its thread is freed
    }

    @Test
    void aMalformedRequestIsAnsweredInWordsNotClassNames() throws Exception {
        PeerServer server = peers.server("node-b", new FakeExports());
        PeerGrpc.PeerBlockingStub stub =
                peers.client(nodeA, TestPeers.at("node-b", server)).stub(TestPeers.at("node-b", server));

        assertThatThrownBy(() -> stub.locate(LocateRequest.getDefaultInstance()))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
                    assertThat(e.getStatus().getDescription())
                            .isEqualTo("the source id is missing")
                            .doesNotContain("Exception");
                });
    }

    static ControllerModifyVolumeRequest modify(String volumeId) {
        return ControllerModifyVolumeRequest.newBuilder()
                .setVolumeId(volumeId)
                .putMutableParams("allocation", "preallocated")
                .build();
    }

    private static PeerServer.Bounds withConnections(int connections) {
        return bounds(connections, BOUNDS.handshake(), BOUNDS.threads(), BOUNDS.callDeadline());
    }

    private static PeerServer.Bounds withHandshake(Duration handshake) {
        return bounds(BOUNDS.connections(), handshake, BOUNDS.threads(), BOUNDS.callDeadline());
    }

    private static PeerServer.Bounds withThreads(int threads) {
        return bounds(BOUNDS.connections(), BOUNDS.handshake(), threads, BOUNDS.callDeadline());
    }

    private static PeerServer.Bounds withCallDeadline(Duration deadline) {
        return bounds(BOUNDS.connections(), BOUNDS.handshake(), BOUNDS.threads(), deadline);
    }

    /** The default bounds, but for those the tests here change. */
    private static PeerServer.Bounds bounds(int connections, Duration handshake, int threads, Duration callDeadline) {
        return new PeerServer.Bounds(
                connections,
                handshake,
                BOUNDS.requestBytes(),
                BOUNDS.callsPerConnection(),
                BOUNDS.connectionIdle(),
                BOUNDS.connectionAge(),
                callDeadline,
                threads);
    }

    private static long seconds(int n) {
        return TimeUnit.SECONDS.toNanos(n);
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Waits for what the server's event loop does on its own, with a generous bound. */
    private static void awaitTrue(BooleanSupplier condition) throws InterruptedException {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime()).as("waited 10s").isLessThan(until);
            Thread.sleep(5);
        }
    }

    /** Time that passes only when the limit sleeps. */
    static final class FakeClock implements BandwidthLimit.Clock {
        private long now = 1_000_000_000_000L;
        private final List<Long> slept = new ArrayList<>();

        @Override
        public synchronized long nanoTime() {
            return now;
        }

        @Override
        public synchronized void sleepNanos(long nanos) {
            slept.add(nanos);
            now += nanos;
        }

        synchronized List<Long> slept() {
            return List.copyOf(slept);
        }
    }
}
