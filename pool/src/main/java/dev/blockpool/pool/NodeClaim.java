package dev.blockpool.pool;

import dev.blockpool.pool.records.PoolLockFile;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One node plugin per node ID on a pool: the one that holds {@code nodes/<node-id>.lock} (a
 * {@link PoolLockFile}) for its life. A second plugin started with the same {@code --node-id}
 * on the same pool, on this host or another, is not ready and names the holder; it takes the ID
 * once the holder is gone (the lock dies with its process). Two plugins under one ID would each
 * believe the node's attachments and staged volumes their own.
 */
public final class NodeClaim {

    static final String SUFFIX = ".lock";

    private static final Logger log = LoggerFactory.getLogger(NodeClaim.class);

    private final Path file;
    private final String nodeId;
    private final Clock clock;
    private PoolLockFile held;
    /** Set once the driver stops: the ID is never taken again. */
    private boolean stopping;

    NodeClaim(Path nodesDirectory, String nodeId, Clock clock) {
        Ids.requireNodeId(nodeId);
        this.file = nodesDirectory.resolve(nodeId + SUFFIX);
        this.nodeId = nodeId;
        this.clock = clock;
    }

    /** Why this plugin may not serve the node ID now, or empty when it may (taking the ID if it is free). */
    public synchronized Optional<String> problem() {
        if (held != null) {
            return Optional.empty();
        }
        if (stopping) {
            return Optional.of("this node plugin is stopping");
        }
        Optional<PoolLockFile> taken = PoolLockFile.tryTakeNoted(file, clock);
        if (taken.isEmpty()) {
            return Optional.of("another node plugin serves node ID " + nodeId + " on this pool ("
                    + PoolLockFile.holder(file) + "); give each node plugin a node ID of its own");
        }
        held = taken.get();
        log.info("this node plugin serves node ID {} on the pool ({})", nodeId, PoolLockFile.holder(file));
        return Optional.empty();
    }

    /**
     * The driver has begun to stop: from now on this plugin never takes the node ID, however late
     * a look of Probe's asks. An ID it holds stays until {@link #close}, for the calls being drained.
     */
    public synchronized void stopTaking() {
        stopping = true;
    }

    /** Lets another plugin take the node ID (a driver stopping); this one never takes it again. */
    public synchronized void close() {
        stopping = true;
        if (held != null) {
            held.close();
            held = null;
        }
    }
}
