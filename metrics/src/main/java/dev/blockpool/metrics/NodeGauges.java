package dev.blockpool.metrics;

import dev.blockpool.node.NodeCensus;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

/** The node's gauges, from its last {@link NodeCensus}: what this node holds of the pool, and what is wrong with it. */
final class NodeGauges {

    private NodeGauges() {}

    static void register(PrometheusRegistry registry, LastCensus<NodeCensus.Figures> census) {
        census.gauge(
                registry,
                "blockpool_node_loop_devices",
                "Loop devices bound to volume images of the pool on this node",
                NodeCensus.Figures::loopDevices);
        census.gauge(
                registry,
                "blockpool_node_staged_volumes",
                "Volumes staged on this node: those with a loop device bound here",
                NodeCensus.Figures::stagedVolumes);
        GaugeWithCallback.builder()
                .name("blockpool_node_volume_problems")
                .help("Volumes staged on this node with a problem, by the condition NodeGetVolumeHealth reports")
                .labelNames("severity", "reason")
                .callback(callback -> census.last()
                        .ifPresent(f -> f.volumeProblems()
                                .forEach((condition, volumes) -> callback.call(
                                        volumes, condition.severity().name(), condition.reason()))))
                .register(registry);
        GaugeWithCallback.builder()
                .name("blockpool_node_storage_problems")
                .help("1 for each condition of the pool NodeGetStorageHealth reports from this node")
                .labelNames("severity", "reason")
                .callback(callback -> census.last()
                        .ifPresent(f -> f.storageProblems()
                                .forEach(condition ->
                                        callback.call(1, condition.severity().name(), condition.reason()))))
                .register(registry);
        census.gauge(
                registry,
                "blockpool_node_census_duration_seconds",
                "How long the last look at this node's loop devices, mounts and their health took",
                f -> f.took().toNanos() / 1e9);
    }
}
