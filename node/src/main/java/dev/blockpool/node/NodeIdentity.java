package dev.blockpool.node;

import dev.blockpool.csi.CsiKeys;
import java.util.Map;

/** What NodeGetInfo reports: this node's ID, its attach limit and its topology segment. */
public record NodeIdentity(String nodeId, long maxVolumesPerNode, Map<String, String> topology) {

    public NodeIdentity {
        topology = Map.copyOf(topology);
    }

    /** A node whose topology is itself: volumes in a node-local pool are reachable only here. */
    public static NodeIdentity of(String nodeId, long maxVolumesPerNode) {
        return new NodeIdentity(nodeId, maxVolumesPerNode, Map.of(CsiKeys.TOPOLOGY_NODE, nodeId));
    }
}
