package dev.blockpool.pool;

import java.util.Map;

/** A node that registered itself in the pool, stored in {@code nodes/<id>.json}. */
public record NodeRecord(String nodeId, long maxVolumesPerNode, Map<String, String> topology) {

    public NodeRecord {
        topology = Map.copyOf(topology);
    }
}
