package dev.blockpool.node;

import java.util.Map;

/** What NodeGetInfo reports: this node's ID, its attach limit and its topology segment. */
public record NodeIdentity(String nodeId, long maxVolumesPerNode, Map<String, String> topology) {

    public static final String TOPOLOGY_KEY = "topology.blockpool.csi.dev/node";

    public NodeIdentity {
        topology = Map.copyOf(topology);
    }

    /** A node whose topology is itself: volumes in a node-local pool are reachable only here. */
    public static NodeIdentity of(String nodeId, long maxVolumesPerNode) {
        return new NodeIdentity(nodeId, maxVolumesPerNode, Map.of(TOPOLOGY_KEY, nodeId));
    }
}
