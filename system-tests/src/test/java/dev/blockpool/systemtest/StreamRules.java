package dev.blockpool.systemtest;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import csi.v1.Csi;
import java.util.List;
import java.util.Optional;

/**
 * The rules of a SnapshotMetadata stream (CSI spec) that hold whatever the snapshots hold, judged
 * a message at a time: the same capacity in every message, at most max_results tuples each, none
 * empty, none beyond the capacity, none before starting_offset, in order and apart across the
 * whole stream.
 */
final class StreamRules {

    private final long startingOffset;
    private final int maxResults;
    private long capacity = -1;
    /** Where the last tuple ended: the next may start there at the earliest. */
    private long reachedEnd;

    private StreamRules(long startingOffset, int maxResults) {
        this.startingOffset = startingOffset;
        this.maxResults = maxResults;
        this.reachedEnd = startingOffset;
    }

    /** The rules for the stream {@code request} asks for; empty for a request that is not a SnapshotMetadata one. */
    static Optional<StreamRules> of(Message request) {
        return switch (request) {
            case Csi.GetMetadataAllocatedRequest r ->
                Optional.of(new StreamRules(r.getStartingOffset(), r.getMaxResults()));
            case Csi.GetMetadataDeltaRequest r ->
                Optional.of(new StreamRules(r.getStartingOffset(), r.getMaxResults()));
            case null, default -> Optional.empty();
        };
    }

    /** The first rule {@code message}, the next of the stream for {@code method}, breaks; empty when none. */
    Optional<String> broken(String method, byte[] message) {
        long messageCapacity;
        List<Csi.BlockMetadata> tuples;
        try {
            if (method.equals("GetMetadataDelta")) {
                Csi.GetMetadataDeltaResponse delta = Csi.GetMetadataDeltaResponse.parseFrom(message);
                messageCapacity = delta.getVolumeCapacityBytes();
                tuples = delta.getBlockMetadataList();
            } else {
                Csi.GetMetadataAllocatedResponse allocated = Csi.GetMetadataAllocatedResponse.parseFrom(message);
                messageCapacity = allocated.getVolumeCapacityBytes();
                tuples = allocated.getBlockMetadataList();
            }
        } catch (InvalidProtocolBufferException e) {
            return Optional.of("unparsable message: " + e.getMessage());
        }
        if (capacity >= 0 && messageCapacity != capacity) {
            return Optional.of("volume_capacity_bytes " + messageCapacity + " after " + capacity);
        }
        capacity = messageCapacity;
        if (maxResults > 0 && tuples.size() > maxResults) {
            return Optional.of(tuples.size() + " tuples in one message, max_results " + maxResults);
        }
        for (Csi.BlockMetadata tuple : tuples) {
            long offset = tuple.getByteOffset();
            long size = tuple.getSizeBytes();
            if (size <= 0 || offset < reachedEnd || offset > capacity - size) {
                return Optional.of("tuple (%d, %d) after one ending at %d, from %d, in %d bytes"
                        .formatted(offset, size, reachedEnd, startingOffset, capacity));
            }
            reachedEnd = offset + size;
        }
        return Optional.empty();
    }
}
