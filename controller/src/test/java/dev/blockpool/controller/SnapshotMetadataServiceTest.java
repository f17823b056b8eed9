package dev.blockpool.controller;

import static dev.blockpool.controller.ControllerHarness.MIB;
import static dev.blockpool.controller.ControllerHarness.createRequest;
import static dev.blockpool.csi.StatusAssertions.assertCode;
import static org.assertj.core.api.Assertions.assertThat;

import csi.v1.ControllerGrpc;
import csi.v1.Csi.BlockMetadata;
import csi.v1.Csi.BlockMetadataType;
import csi.v1.Csi.CreateSnapshotRequest;
import csi.v1.Csi.GetMetadataAllocatedRequest;
import csi.v1.Csi.GetMetadataAllocatedResponse;
import csi.v1.Csi.GetMetadataDeltaRequest;
import csi.v1.Csi.GetMetadataDeltaResponse;
import csi.v1.SnapshotMetadataGrpc;
import dev.blockpool.common.OperationLocks;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.csi.InProcessCsi;
import dev.blockpool.pool.Pool;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The SnapshotMetadata stream's rules, as a backup tool sees them through gRPC: tuples in order
 * and apart across messages, max_results per message, the same type and capacity in every
 * message, starting_offset honoured, the spec's error codes, and a cancelled stream letting go of
 * the images. On whatever filesystem the temporary directory is: the ranges themselves are proved
 * on XFS and ext4 by the pool's real-host test.
 */
class SnapshotMetadataServiceTest {

    private static final long SIZE = 16 * MIB;
    private static final int BLOCK = 4096;
    /** Scattered single blocks written before the first snapshot, each apart from the next. */
    private static final int BLOCKS = 40;

    @TempDir
    Path poolDir;

    private Pool pool;
    private InProcessCsi served;
    private SnapshotMetadataGrpc.SnapshotMetadataBlockingStub metadata;
    private String volume;
    private String base;
    private String target;

    @BeforeEach
    void setUp() throws IOException {
        pool = Pool.open(poolDir, new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO);
        served = InProcessCsi.serve(
                new ControllerService(pool, new OperationLocks()), new SnapshotMetadataService(pool));
        metadata = SnapshotMetadataGrpc.newBlockingStub(served.channel());
        var controller = ControllerGrpc.newBlockingStub(served.channel());
        volume = controller
                .createVolume(createRequest("pvc-cbt", SIZE).build())
                .getVolume()
                .getVolumeId();
        for (int i = 0; i < BLOCKS; i++) {
            write(i * 3L * BLOCK, (byte) (i + 1));
        }
        base = snapshot(controller, "base");
        write(3L * BLOCK * 5, (byte) 99);
        write(SIZE - BLOCK, (byte) 98);
        target = snapshot(controller, "target");
    }

    @AfterEach
    void tearDown() {
        if (served != null) {
            served.close();
        }
    }

    @Test
    void allocatedStreamsTheDataRangesInOrderWithinMaxResults() {
        List<GetMetadataAllocatedResponse> messages = allocated(base, 0, 7);
        assertThat(messages).hasSize((BLOCKS + 6) / 7);
        assertThat(messages).allSatisfy(message -> {
            assertThat(message.getBlockMetadataType()).isEqualTo(BlockMetadataType.VARIABLE_LENGTH);
            assertThat(message.getVolumeCapacityBytes()).isEqualTo(SIZE);
            assertThat(message.getBlockMetadataCount()).isBetween(1, 7);
        });
        List<BlockMetadata> tuples = inOrder(messages.stream().flatMap(m -> m.getBlockMetadataList().stream()));
        assertThat(tuples).hasSize(BLOCKS);
        for (int i = 0; i < BLOCKS; i++) {
            assertThat(tuples.get(i).getByteOffset()).isEqualTo(i * 3L * BLOCK);
            assertThat(tuples.get(i).getSizeBytes()).isEqualTo(BLOCK);
        }
        assertThat(allocated(base, 0, 0))
                .as("max_results 0: the driver's choice")
                .hasSize(1);
    }

    @Test
    void aMessageHoldsABoundedNumberOfTuplesWhateverMaxResultsAsks() {
        int most = SnapshotMetadataService.MOST_TUPLES_PER_MESSAGE;
        assertThat(SnapshotMetadataService.tuplesPerMessage(Integer.MAX_VALUE)).isEqualTo(most);
        assertThat(SnapshotMetadataService.tuplesPerMessage(most - 1)).isEqualTo(most - 1);
        BlockMetadata widest = BlockMetadata.newBuilder()
                .setByteOffset(Long.MAX_VALUE)
                .setSizeBytes(Long.MAX_VALUE)
                .build();
        GetMetadataDeltaResponse fullest = GetMetadataDeltaResponse.newBuilder()
                .setBlockMetadataType(BlockMetadataType.VARIABLE_LENGTH)
                .setVolumeCapacityBytes(Long.MAX_VALUE)
                .addAllBlockMetadata(Collections.nCopies(most, widest))
                .build();
        assertThat(fullest.getSerializedSize())
                .as("the fullest message, against the 4 MiB a gRPC client takes by default")
                .isLessThan(1 << 20);
        assertThat(allocated(base, 0, Integer.MAX_VALUE)).hasSize(1);
    }

    @Test
    void aResumedStreamStartsWhereTheBrokenOneStopped() {
        long resumeAt = 10 * 3L * BLOCK + 100; // inside the 11th block
        List<BlockMetadata> tuples =
                inOrder(allocated(base, resumeAt, 4).stream().flatMap(m -> m.getBlockMetadataList().stream()));
        assertThat(tuples.getFirst().getByteOffset()).isEqualTo(resumeAt);
        assertThat(tuples.getFirst().getByteOffset() + tuples.getFirst().getSizeBytes())
                .isEqualTo(11 * 3L * BLOCK - 2 * BLOCK);
        assertThat(tuples).hasSize(BLOCKS - 10);

        List<GetMetadataAllocatedResponse> atTheEnd = allocated(base, SIZE, 0);
        assertThat(atTheEnd)
                .as("nothing after the end, but the capacity is said once")
                .hasSize(1);
        assertThat(atTheEnd.getFirst().getBlockMetadataCount()).isZero();
        assertThat(atTheEnd.getFirst().getVolumeCapacityBytes()).isEqualTo(SIZE);
    }

    @Test
    void deltaReportsTheChangedBlocks() {
        List<GetMetadataDeltaResponse> messages = delta(base, target, 0, 1);
        assertThat(messages).allSatisfy(message -> {
            assertThat(message.getBlockMetadataType()).isEqualTo(BlockMetadataType.VARIABLE_LENGTH);
            assertThat(message.getVolumeCapacityBytes()).isEqualTo(SIZE);
        });
        assertThat(inOrder(messages.stream().flatMap(m -> m.getBlockMetadataList().stream())))
                .extracting(BlockMetadata::getByteOffset, BlockMetadata::getSizeBytes)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple(3L * BLOCK * 5, (long) BLOCK),
                        org.assertj.core.groups.Tuple.tuple(SIZE - BLOCK, (long) BLOCK));
        assertThat(delta(base, target, SIZE - BLOCK / 2, 0).getFirst().getBlockMetadataList())
                .extracting(BlockMetadata::getByteOffset)
                .containsExactly(SIZE - BLOCK / 2);
    }

    @Test
    void badRequestsGetTheSpecsCodes() {
        assertCode(() -> allocated("", 0, 0), Status.Code.INVALID_ARGUMENT);
        assertCode(() -> allocated(base, 0, -1), Status.Code.INVALID_ARGUMENT);
        assertCode(() -> allocated("snap-nothere", 0, 0), Status.Code.NOT_FOUND);
        assertCode(() -> allocated(base, -1, 0), Status.Code.OUT_OF_RANGE);
        assertCode(() -> allocated(base, SIZE + 1, 0), Status.Code.OUT_OF_RANGE);
        assertCode(() -> delta(base, "", 0, 0), Status.Code.INVALID_ARGUMENT);
        assertCode(() -> delta("snap-nothere", target, 0, 0), Status.Code.NOT_FOUND);
        assertCode(() -> delta(target, base, 0, 0), Status.Code.INVALID_ARGUMENT);
        assertCode(() -> delta(base, target, SIZE + 1, 0), Status.Code.OUT_OF_RANGE);
    }

    @Test
    @Timeout(60)
    void aCancelledStreamLetsGoOfTheImage() throws Exception {
        Path image = pool.snapshots().imagePath(base);
        CountDownLatch first = new CountDownLatch(1);
        List<ClientCallStreamObserver<?>> calls = new ArrayList<>();
        SnapshotMetadataGrpc.newStub(served.channel())
                .getMetadataAllocated(
                        GetMetadataAllocatedRequest.newBuilder()
                                .setSnapshotId(base)
                                .setMaxResults(1)
                                .build(),
                        new ClientResponseObserver<GetMetadataAllocatedRequest, GetMetadataAllocatedResponse>() {
                            @Override
                            public void beforeStart(ClientCallStreamObserver<GetMetadataAllocatedRequest> call) {
                                calls.add(call);
                                call.disableAutoRequestWithInitial(1); // one message, then the reader stalls
                            }

                            @Override
                            public void onNext(GetMetadataAllocatedResponse value) {
                                first.countDown();
                            }

                            @Override
                            public void onError(Throwable t) {}

                            @Override
                            public void onCompleted() {}
                        });
        assertThat(first.await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(isOpen(image))
                .as("the stream waits for its reader, the image open")
                .isTrue();
        ((ClientCallStreamObserver<?>) calls.getFirst()).cancel("the backup was stopped", null);
        while (isOpen(image)) {
            Thread.sleep(10); // the server learns of the cancellation on its own thread
        }
    }

    /** Whether this process holds a descriptor of {@code image}. */
    private static boolean isOpen(Path image) throws IOException {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.anyMatch(fd -> {
                try {
                    return Files.readSymbolicLink(fd).equals(image);
                } catch (IOException e) {
                    return false; // closed meanwhile
                }
            });
        }
    }

    private List<GetMetadataAllocatedResponse> allocated(String snapshot, long from, int max) {
        return drain(metadata.getMetadataAllocated(GetMetadataAllocatedRequest.newBuilder()
                .setSnapshotId(snapshot)
                .setStartingOffset(from)
                .setMaxResults(max)
                .build()));
    }

    private List<GetMetadataDeltaResponse> delta(String from, String to, long offset, int max) {
        return drain(metadata.getMetadataDelta(GetMetadataDeltaRequest.newBuilder()
                .setBaseSnapshotId(from)
                .setTargetSnapshotId(to)
                .setStartingOffset(offset)
                .setMaxResults(max)
                .build()));
    }

    private static <T> List<T> drain(Iterator<T> stream) {
        List<T> messages = new ArrayList<>();
        stream.forEachRemaining(messages::add);
        return messages;
    }

    /** The tuples, asserted strictly increasing and apart across the whole stream. */
    private static List<BlockMetadata> inOrder(Stream<BlockMetadata> tuples) {
        List<BlockMetadata> all = tuples.toList();
        for (int i = 1; i < all.size(); i++) {
            BlockMetadata before = all.get(i - 1);
            assertThat(before.getByteOffset() + before.getSizeBytes())
                    .isLessThanOrEqualTo(all.get(i).getByteOffset());
        }
        assertThat(all).allSatisfy(tuple -> assertThat(tuple.getSizeBytes()).isPositive());
        return all;
    }

    private String snapshot(ControllerGrpc.ControllerBlockingStub controller, String name) {
        return controller
                .createSnapshot(CreateSnapshotRequest.newBuilder()
                        .setName(name)
                        .setSourceVolumeId(volume)
                        .build())
                .getSnapshot()
                .getSnapshotId();
    }

    private void write(long offset, byte value) throws IOException {
        byte[] block = new byte[BLOCK];
        java.util.Arrays.fill(block, value);
        try (FileChannel channel = FileChannel.open(pool.volumes().imagePath(volume), StandardOpenOption.WRITE)) {
            channel.write(ByteBuffer.wrap(block), offset);
            channel.force(true);
        }
    }
}
