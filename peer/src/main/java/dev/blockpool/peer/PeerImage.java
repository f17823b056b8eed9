package dev.blockpool.peer;

import dev.blockpool.peer.v1.PeerGrpc;
import dev.blockpool.peer.v1.RangesRequest;
import dev.blockpool.peer.v1.ReadRequest;
import dev.blockpool.peer.v1.ReadResponse;
import dev.blockpool.peer.v1.Transfer;
import dev.blockpool.pool.extents.ByteRange;
import dev.blockpool.pool.transfer.Chunk;
import dev.blockpool.pool.transfer.RemoteImage;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * An image another node opened for a transfer, read over the peer channel: each call one RPC with
 * a deadline, failing with a StorageException ({@link PeerFailures}). It holds nothing on the
 * serving node, so {@link #close} sends nothing; {@link #release} ends the transfer there.
 */
public final class PeerImage implements RemoteImage {

    private final PeerAddress peer;
    private final PeerGrpc.PeerBlockingStub stub;
    private final Duration deadline;
    private final Transfer transfer;
    private final long sizeBytes;
    private final String identity;
    private final Optional<String> basis;
    private final PeerClient client;

    PeerImage(
            PeerAddress peer,
            PeerGrpc.PeerBlockingStub stub,
            Duration deadline,
            Transfer transfer,
            long sizeBytes,
            String identity,
            Optional<String> basis,
            PeerClient client) {
        this.peer = peer;
        this.stub = stub;
        this.deadline = deadline;
        this.transfer = transfer;
        this.sizeBytes = sizeBytes;
        this.identity = identity;
        this.basis = basis;
        this.client = client;
    }

    @Override
    public String node() {
        return peer.node();
    }

    @Override
    public long sizeBytes() {
        return sizeBytes;
    }

    @Override
    public String identity() {
        return identity;
    }

    @Override
    public Optional<String> basis() {
        return basis;
    }

    @Override
    public List<ByteRange> ranges(long from, int max) {
        try {
            return withDeadline()
                    .ranges(RangesRequest.newBuilder()
                            .setTransfer(transfer)
                            .setIdentity(identity)
                            .setFrom(from)
                            .setMax(max)
                            .build())
                    .getRangesList()
                    .stream()
                    .map(Wire::range)
                    .toList();
        } catch (StatusRuntimeException e) {
            throw PeerFailures.of(e, peer, "listing the ranges of " + Wire.describe(Wire.source(transfer.getSource())));
        }
    }

    @Override
    public Chunk read(long offset, int length) {
        try {
            ReadResponse chunk = withDeadline()
                    .read(ReadRequest.newBuilder()
                            .setTransfer(transfer)
                            .setIdentity(identity)
                            .setOffset(offset)
                            .setLength(length)
                            .build());
            return new Chunk(chunk.getOffset(), chunk.getData().toByteArray(), chunk.getCrc32C());
        } catch (StatusRuntimeException e) {
            throw PeerFailures.of(
                    e,
                    peer,
                    "reading " + length + " bytes at " + offset + " of "
                            + Wire.describe(Wire.source(transfer.getSource())));
        }
    }

    /** Ends the transfer on the node that serves it: what it froze for the transfer is dropped. */
    public void release() {
        client.release(peer, transfer.getTransferId());
    }

    /** Nothing to end on the serving node: every call opens the transfer's image there again. */
    @Override
    public void close() {}

    private PeerGrpc.PeerBlockingStub withDeadline() {
        return stub.withDeadlineAfter(deadline.toMillis(), TimeUnit.MILLISECONDS);
    }
}
