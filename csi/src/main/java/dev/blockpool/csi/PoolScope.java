package dev.blockpool.csi;

import csi.v1.Csi.Topology;
import csi.v1.Csi.TopologyRequirement;
import dev.blockpool.common.Quoting;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Which nodes reach the pool a driver serves: every node ({@link Shared}, a pool on NFS or
 * GlusterFS), or only the node the driver runs on ({@link NodeLocal}, a pool on each node's own
 * disk, every volume pinned there by its topology segment).
 */
public sealed interface PoolScope {

    /** The scope as the command line names it (--pool-scope). */
    enum Kind {
        NODE,
        SHARED
    }

    /** The pool is one directory every node mounts: a volume is reachable wherever the driver runs. */
    record Shared() implements PoolScope {}

    /** The pool is this node's own directory: its volumes are reachable only on {@code nodeId}. */
    record NodeLocal(String nodeId) implements PoolScope {

        /** This node's segment, as NodeGetInfo reports it and a volume's accessible_topology carries it. */
        public Topology topology() {
            return Topology.newBuilder()
                    .putSegments(CsiKeys.TOPOLOGY_NODE, nodeId)
                    .build();
        }

        /** Whether a volume in this node's pool is accessible from {@code topology}: it names this node alone. */
        public boolean reaches(Topology topology) {
            return topology.getSegmentsMap().equals(Map.of(CsiKeys.TOPOLOGY_NODE, nodeId));
        }

        /**
         * Where the CO allows the volume, when it says: the requisite topologies, or, when it names
         * only preferred ones, those (a volume here can live nowhere else, so a CO that prefers
         * other nodes is better served by trying them). Empty when it allows anywhere.
         */
        private static List<Topology> allowed(TopologyRequirement requirement) {
            return requirement.getRequisiteCount() > 0
                    ? requirement.getRequisiteList()
                    : requirement.getPreferredList();
        }
    }

    static PoolScope shared() {
        return new Shared();
    }

    static PoolScope nodeLocal(String nodeId) {
        return new NodeLocal(nodeId);
    }

    /** The accessible_topology of every volume in the pool: none when shared, this node when node-local. */
    default Optional<Topology> volumeTopology() {
        return this instanceof NodeLocal local ? Optional.of(local.topology()) : Optional.empty();
    }

    /**
     * Refuses, with RESOURCE_EXHAUSTED and before anything is made, a CreateVolume whose
     * accessibility_requirements this pool cannot meet. RESOURCE_EXHAUSTED is the code on which
     * external-provisioner gives up a claim whose node the scheduler chose (WaitForFirstConsumer)
     * and has the scheduler choose again (checkError: ProvisioningReschedule); any other definite
     * code is final there and would retry on the same node for ever.
     */
    default void requireReachable(TopologyRequirement requirement, String what) {
        if (!(this instanceof NodeLocal local)) {
            return;
        }
        List<Topology> allowed = NodeLocal.allowed(requirement);
        if (!allowed.isEmpty() && allowed.stream().noneMatch(local::reaches)) {
            throw CsiException.resourceExhausted(
                    "this driver serves the pool of node %s, and the %s must be accessible from %s only",
                    local.nodeId(), what, describe(allowed));
        }
    }

    /** Whether the CO chose where the volume goes (a claim's node, under WaitForFirstConsumer). */
    static boolean placed(TopologyRequirement requirement) {
        return !NodeLocal.allowed(requirement).isEmpty();
    }

    /** The free space a pool with {@code available} bytes offers to {@code topology}: none outside this node. */
    default long capacityFor(Optional<Topology> topology, long available) {
        return this instanceof NodeLocal local && topology.isPresent() && !local.reaches(topology.get())
                ? 0
                : available;
    }

    private static String describe(List<Topology> topologies) {
        return topologies.stream()
                        .limit(3)
                        .map(t -> Quoting.quote(t.getSegmentsMap().toString()))
                        .collect(Collectors.joining(", "))
                + (topologies.size() > 3 ? ", ..." : "");
    }
}
