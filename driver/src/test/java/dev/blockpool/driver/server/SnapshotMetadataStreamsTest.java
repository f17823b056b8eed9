package dev.blockpool.driver.server;

import static org.assertj.core.api.Assertions.assertThat;

import csi.v1.Csi.GetMetadataAllocatedRequest;
import csi.v1.Csi.GetMetadataAllocatedResponse;
import csi.v1.Csi.GetMetadataDeltaRequest;
import csi.v1.SnapshotMetadataGrpc;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.controller.SnapshotMetadataService;
import dev.blockpool.csi.StatusInterceptor;
import dev.blockpool.pool.AccessType;
import dev.blockpool.pool.Allocation;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.VolumeSpecs;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * SnapshotMetadata streams under the driver's deadlines ({@link CallDeadlines}), in-process: the
 * in-process transport is ready for a message only when the client asked for one, so a client
 * that asks for none holds a stream open until its deadline, on every machine alike.
 */
class SnapshotMetadataStreamsTest {

    private static final long MIB = 1 << 20;
    private static final int BLOCK = 4096;
    /** Scattered blocks: a stream of one tuple per message takes this many messages. */
    private static final int BLOCKS = 8;

    @TempDir
    Path poolDir;

    private Pool pool;
    private Server server;
    private ManagedChannel channel;
    private String base;
    private String target;

    @BeforeEach
    void setUp() throws IOException {
        pool = Pool.open(poolDir, new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO);
        String volume = pool.volumes()
                .create(VolumeSpecs.of("pvc-streams", 4 * MIB, Allocation.SPARSE, AccessType.BLOCK))
                .id();
        for (int i = 0; i < BLOCKS; i++) {
            write(volume, i * 2L * BLOCK);
        }
        base = pool.snapshots().create("base", volume, pool.volumes()).id();
        write(volume, BLOCK);
        target = pool.snapshots().create("target", volume, pool.volumes()).id();
    }

    private void serve(CallDeadlines deadlines) throws IOException {
        String name = InProcessServerBuilder.generateName();
        server = InProcessServerBuilder.forName(name)
                .addService(ServerInterceptors.intercept(
                        new SnapshotMetadataService(pool), List.of(new StatusInterceptor(), deadlines)))
                .build()
                .start();
        channel = InProcessChannelBuilder.forName(name).build();
    }

    @AfterEach
    void tearDown() throws InterruptedException {
        if (channel != null) {
            channel.shutdownNow();
        }
        if (server != null) {
            server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    @Test
    @Timeout(120)
    void streamsCutAtTheirDeadlineLetGoOfTheirImages() throws Exception {
        serve(new CallDeadlines(new CallThreads()));
        long before = openInPool();
        List<CompletableFuture<Status>> streams = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            streams.add(
                    i % 2 == 0
                            ? readOneMessage(
                                    GetMetadataAllocatedRequest.newBuilder()
                                            .setSnapshotId(base)
                                            .setMaxResults(1)
                                            .build(),
                                    stub()::getMetadataAllocated)
                            : readOneMessage(
                                    GetMetadataDeltaRequest.newBuilder()
                                            .setBaseSnapshotId(base)
                                            .setTargetSnapshotId(target)
                                            .setMaxResults(1)
                                            .build(),
                                    stub()::getMetadataDelta));
        }
        for (CompletableFuture<Status> stream : streams) {
            assertThat(stream.get(30, TimeUnit.SECONDS).getCode())
                    .isIn(StatusInterceptor.RETRY_LATER, Status.Code.DEADLINE_EXCEEDED);
        }
        assertThat(openInPoolOnceSettled(before))
                .as("descriptors of the pool's images after 100 streams were cut at their deadlines")
                .isEqualTo(before);
    }

    /** The descriptors of the pool's files open now, once they are {@code expected} or after 30 s. */
    private long openInPoolOnceSettled(long expected) throws Exception {
        // The server hears of each call's end on a thread of its own, after the client does.
        long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        long open = openInPool();
        while (open != expected && System.nanoTime() < giveUp) {
            Thread.sleep(10);
            open = openInPool();
        }
        return open;
    }

    @Test
    @Timeout(60)
    void aStreamWithoutADeadlineGoesOnWhileItMakesProgress() throws Exception {
        // Calls without a deadline of their own are answered within 3 s here, in place of 2 min.
        serve(new CallDeadlines(CallDeadlines.MOST_STUCK, new CallThreads(), Duration.ofSeconds(4)));
        Iterator<GetMetadataAllocatedResponse> stream = SnapshotMetadataGrpc.newBlockingStub(channel)
                .getMetadataAllocated(GetMetadataAllocatedRequest.newBuilder()
                        .setSnapshotId(base)
                        .setMaxResults(1)
                        .build());
        int tuples = 0;
        while (stream.hasNext()) {
            tuples += stream.next().getBlockMetadataCount();
            // A slow reader: the driver's next message waits for it, the whole stream longer than 3 s.
            Thread.sleep(500);
        }
        assertThat(tuples).isEqualTo(BLOCKS);
    }

    @Test
    @Timeout(60)
    void aStreamWithoutADeadlineWhoseReaderStopsIsAnsweredAndLetsGo() throws Exception {
        serve(new CallDeadlines(CallDeadlines.MOST_STUCK, new CallThreads(), Duration.ofMillis(200)));
        long before = openInPool();
        CompletableFuture<Status> stalled = readOneMessage(
                GetMetadataAllocatedRequest.newBuilder()
                        .setSnapshotId(base)
                        .setMaxResults(1)
                        .build(),
                SnapshotMetadataGrpc.newStub(channel)::getMetadataAllocated);
        Status status = stalled.get(30, TimeUnit.SECONDS);
        assertThat(status.getCode()).isEqualTo(StatusInterceptor.RETRY_LATER);
        assertThat(status.getDescription()).contains("sent nothing for", "resume it");
        assertThat(openInPoolOnceSettled(before)).isEqualTo(before);
    }

    private SnapshotMetadataGrpc.SnapshotMetadataStub stub() {
        return SnapshotMetadataGrpc.newStub(channel).withDeadlineAfter(300, TimeUnit.MILLISECONDS);
    }

    /** Starts a stream whose reader takes one message and no more: the status it ends with. */
    private static <Q, R> CompletableFuture<Status> readOneMessage(Q request, BiConsumer<Q, StreamObserver<R>> method) {
        CompletableFuture<Status> ended = new CompletableFuture<>();
        method.accept(request, new ClientResponseObserver<Q, R>() {
            @Override
            public void beforeStart(ClientCallStreamObserver<Q> call) {
                call.disableAutoRequestWithInitial(1); // one message: the images are open
            }

            @Override
            public void onNext(R value) {}

            @Override
            public void onError(Throwable t) {
                ended.complete(Status.fromThrowable(t));
            }

            @Override
            public void onCompleted() {
                ended.complete(Status.OK);
            }
        });
        return ended;
    }

    /** The descriptors this process holds of files in the pool. */
    private long openInPool() throws IOException {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.filter(fd -> {
                        try {
                            return Files.readSymbolicLink(fd).startsWith(poolDir);
                        } catch (IOException e) {
                            return false; // closed meanwhile
                        }
                    })
                    .count();
        }
    }

    private void write(String volume, long offset) throws IOException {
        try (FileChannel channel = FileChannel.open(pool.volumes().imagePath(volume), StandardOpenOption.WRITE)) {
            channel.write(ByteBuffer.wrap(new byte[BLOCK]).put(0, (byte) 1), offset);
        }
    }
}
