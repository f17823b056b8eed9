package dev.blockpool.pool.transfer;

import dev.blockpool.pool.ContentSource;
import dev.blockpool.pool.Volume;
import java.util.Optional;

/**
 * The source's side of transfers: what the peer service asks of this node's pool on behalf of
 * another node.
 */
public interface ImageExports {

    /** The size of the snapshot or volume when this pool holds it; empty when it does not. */
    Optional<Long> find(ContentSource source);

    /**
     * The record of a volume this pool holds, as a node it moves to recreates it; empty when it
     * holds none of that ID.
     */
    Optional<Volume> volume(String volumeId);

    /**
     * Opens {@code source} for the transfer {@code transferId}: a snapshot's own image (it never
     * changes), or a copy of a volume's frozen at the transfer's first open and kept until the
     * transfer is released. With {@code basis}, the identity of an earlier transfer's image of the
     * same source that the destination holds, the reader's ranges are only those changed since, if
     * the source still keeps that image; else all that hold data. NOT_FOUND when this pool holds no
     * such source.
     */
    ImageReader open(ContentSource source, String transferId, Optional<String> basis);

    /** Drops what the transfer froze; nothing when there is none. */
    void release(String transferId);
}
