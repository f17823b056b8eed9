package dev.blockpool.metrics;

import dev.blockpool.node.NodeCensus;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.IntSupplier;
import java.util.stream.Collectors;

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
        byCondition(
                registry,
                census,
                "blockpool_node_volume_problems",
                "Volumes staged on this node with a problem, by the condition NodeGetVolumeHealth reports",
                NodeCensus.Figures::volumeProblems);
        byCondition(
                registry,
                census,
                "blockpool_node_storage_problems",
                "1 for each condition of the pool NodeGetStorageHealth reports from this node",
                f -> f.storageProblems().stream().collect(Collectors.toMap(Function.identity(), c -> 1)));
        census.timeGauges(registry);
        census.gauge(
                registry,
                "blockpool_node_census_duration_seconds",
                "How long the last look at this node's loop devices, mounts and their health took",
                f -> f.took().toNanos() / 1e9);
    }

    /**
     * How many volumes a group snapshot holds frozen, or left frozen without the kernel having
     * answered them thawed: above 0 for longer than a group snapshot takes, writes to them hang.
     */
    static void registerFrozen(PrometheusRegistry registry, IntSupplier frozen) {
        GaugeWithCallback.builder()
                .name("blockpool_node_frozen_volumes")
                .help("Volumes whose file systems a group snapshot froze and the kernel has not answered thawed")
                .callback(callback -> callback.call(frozen.getAsInt()))
                .register(registry);
    }

    /** A series per condition, labelled as the health calls name it. */
    private static void byCondition(
            PrometheusRegistry registry,
            LastCensus<NodeCensus.Figures> census,
            String name,
            String help,
            Function<NodeCensus.Figures, Map<NodeCensus.Condition, Integer>> counts) {
        census.gauge(
                registry,
                name,
                help,
                List.of("severity", "reason"),
                (f, series) -> counts.apply(f)
                        .forEach((condition, n) ->
                                series.call(n, condition.severity().name(), condition.reason())));
    }
}
