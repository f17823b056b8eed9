package dev.blockpool.peer;

import java.util.List;

/** The other nodes whose peer servers this node's client asks: never this node itself. */
@FunctionalInterface
public interface PeerDirectory {

    /** The other nodes as they are now; may wait on the Kubernetes API, and fail with a StorageException. */
    List<PeerAddress> peers();

    /** A fixed list, as {@code --peer} gives it. */
    static PeerDirectory of(List<PeerAddress> peers) {
        List<PeerAddress> fixed = List.copyOf(peers);
        return () -> fixed;
    }
}
