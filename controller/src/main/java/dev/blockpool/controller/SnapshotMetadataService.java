package dev.blockpool.controller;

import csi.v1.Csi.BlockMetadata;
import csi.v1.Csi.BlockMetadataType;
import csi.v1.Csi.GetMetadataAllocatedRequest;
import csi.v1.Csi.GetMetadataAllocatedResponse;
import csi.v1.Csi.GetMetadataDeltaRequest;
import csi.v1.Csi.GetMetadataDeltaResponse;
import csi.v1.SnapshotMetadataGrpc;
import dev.blockpool.csi.CsiException;
import dev.blockpool.csi.RequestFields;
import dev.blockpool.csi.StatusInterceptor;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.SnapshotMetadata;
import dev.blockpool.pool.extents.ByteRange;
import dev.blockpool.pool.extents.SnapshotRanges;
import io.grpc.Context;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.function.Function;

/**
 * CSI SnapshotMetadata (alpha): changed block tracking for backup tools, answered from the pool's
 * extents ({@link SnapshotMetadata}). The ranges are VARIABLE_LENGTH: an extent of any size is
 * one tuple, so a snapshot with 100 MiB of data in a few extents takes a few tuples rather than
 * 25,600 fixed 4 KiB ones, and nothing is reported wider than the filesystem stored or changed.
 *
 * <p>A stream sends a message only while gRPC can take it (its readiness), so a slow reader holds
 * back the work instead of piling messages up in memory; it stops as soon as the caller cancels,
 * between messages and within a long scan, and closes the images it opened however it ends:
 * complete, cancelled, failed, or answered by the driver itself at its deadline.
 */
public final class SnapshotMetadataService extends SnapshotMetadataGrpc.SnapshotMetadataImplBase {

    /** Tuples per message when the caller leaves it to the driver (max_results 0): some 20 KiB a message. */
    static final int DEFAULT_TUPLES_PER_MESSAGE = 1024;
    /**
     * The most tuples a message holds, whatever max_results asks (the spec makes it a maximum):
     * at most 22 bytes each, some 350 KiB a message, far under the 4 MiB a gRPC client takes by
     * default, and a bound on what a stream gathers in memory before it sends.
     */
    static final int MOST_TUPLES_PER_MESSAGE = 16 * 1024;

    private final SnapshotMetadata metadata;

    public SnapshotMetadataService(Pool pool) {
        this.metadata = pool.snapshotMetadata();
    }

    @Override
    public void getMetadataAllocated(
            GetMetadataAllocatedRequest request, StreamObserver<GetMetadataAllocatedResponse> response) {
        String snapshotId = RequestFields.id("snapshot_id", request.getSnapshotId());
        int max = tuplesPerMessage(request.getMaxResults());
        SnapshotRanges ranges = metadata.allocated(snapshotId, request.getStartingOffset());
        new Pump<>(
                        response,
                        ranges,
                        max,
                        SnapshotMetadataGrpc.getGetMetadataAllocatedMethod().getFullMethodName(),
                        blocks -> GetMetadataAllocatedResponse.newBuilder()
                                .setBlockMetadataType(BlockMetadataType.VARIABLE_LENGTH)
                                .setVolumeCapacityBytes(ranges.capacityBytes())
                                .addAllBlockMetadata(blocks)
                                .build())
                .start();
    }

    @Override
    public void getMetadataDelta(GetMetadataDeltaRequest request, StreamObserver<GetMetadataDeltaResponse> response) {
        String baseId = RequestFields.id("base_snapshot_id", request.getBaseSnapshotId());
        String targetId = RequestFields.id("target_snapshot_id", request.getTargetSnapshotId());
        int max = tuplesPerMessage(request.getMaxResults());
        SnapshotRanges ranges = metadata.delta(baseId, targetId, request.getStartingOffset());
        new Pump<>(
                        response,
                        ranges,
                        max,
                        SnapshotMetadataGrpc.getGetMetadataDeltaMethod().getFullMethodName(),
                        blocks -> GetMetadataDeltaResponse.newBuilder()
                                .setBlockMetadataType(BlockMetadataType.VARIABLE_LENGTH)
                                .setVolumeCapacityBytes(ranges.capacityBytes())
                                .addAllBlockMetadata(blocks)
                                .build())
                .start();
    }

    static int tuplesPerMessage(int maxResults) {
        if (maxResults < 0) {
            throw CsiException.invalidArgument(
                    "max_results is %d: give the most tuples per message, or 0 to leave it to the driver", maxResults);
        }
        return maxResults == 0 ? DEFAULT_TUPLES_PER_MESSAGE : Math.min(maxResults, MOST_TUPLES_PER_MESSAGE);
    }

    /**
     * Sends the ranges as messages while the call is ready for them, and goes on when gRPC says
     * it is ready again. gRPC runs a call's callbacks one at a time, so the pump, the readiness
     * and the cancellation callbacks never run at once; the call's {@link Context} is cancelled
     * by the transport itself, at once, so a pump at work sees a cancellation in between.
     */
    private static final class Pump<R> {
        private final ServerCallStreamObserver<R> call;
        private final SnapshotRanges ranges;
        private final int max;
        private final String method;
        private final Function<List<BlockMetadata>, R> message;
        private final Context context = Context.current();
        private boolean sentAny;
        private boolean finished;

        Pump(
                StreamObserver<R> response,
                SnapshotRanges ranges,
                int max,
                String method,
                Function<List<BlockMetadata>, R> message) {
            this.call = (ServerCallStreamObserver<R>) response;
            this.ranges = ranges;
            this.max = max;
            this.method = method;
            this.message = message;
        }

        void start() {
            call.setOnCancelHandler(this::finish);
            // A call the driver closes itself (answered at its deadline) completes without a
            // cancellation, and may end while the pump waits for readiness that never comes.
            call.setOnCloseHandler(this::finish);
            call.setOnReadyHandler(this::pump);
            pump();
        }

        private void pump() {
            try {
                while (!finished && call.isReady()) {
                    List<ByteRange> next = ranges.next(max, context::isCancelled);
                    if (context.isCancelled()) {
                        finish();
                        return;
                    }
                    if (next.isEmpty() && sentAny) {
                        finish();
                        call.onCompleted();
                        return;
                    }
                    // An image without any range still answers once: the capacity and the type.
                    call.onNext(message.apply(next.stream().map(Pump::block).toList()));
                    sentAny = true;
                }
            } catch (RuntimeException | Error e) {
                finish();
                call.onError(StatusInterceptor.statusOf(method, e).asRuntimeException());
            }
        }

        private void finish() {
            if (!finished) {
                finished = true;
                ranges.close();
            }
        }

        private static BlockMetadata block(ByteRange range) {
            return BlockMetadata.newBuilder()
                    .setByteOffset(range.offset())
                    .setSizeBytes(range.length())
                    .build();
        }
    }
}
