package dev.blockpool.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.HealthProblem.Severity;
import dev.blockpool.node.NodeCensus;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The node's gauges as a scrape shows them: one series per condition, labelled as the health calls name it. */
class NodeGaugesTest {

    @Test
    void eachConditionIsASeriesOfItsOwn() {
        PrometheusRegistry registry = new PrometheusRegistry();
        LastCensus<NodeCensus.Figures> census = LastCensus.byHand(
                "node",
                () -> new NodeCensus.Figures(
                        3,
                        2,
                        Map.of(new NodeCensus.Condition(Severity.DEGRADED, "FilesystemErrors"), 2),
                        List.of(new NodeCensus.Condition(Severity.INACCESSIBLE, "PoolUnavailable")),
                        Duration.ofMillis(4)));
        NodeGauges.register(registry, census);
        census.refresh();

        String text = Scrape.of(registry);

        assertThat(Scrape.values(text, "blockpool_node_loop_devices")).containsExactly(3.0);
        assertThat(Scrape.values(text, "blockpool_node_staged_volumes")).containsExactly(2.0);
        assertThat(Scrape.values(text, "blockpool_node_census_timestamp_seconds"))
                .singleElement()
                .satisfies(at -> assertThat(at).isPositive());
        assertThat(Scrape.values(
                        text, "blockpool_node_volume_problems{reason=\"FilesystemErrors\",severity=\"DEGRADED\"}"))
                .containsExactly(2.0);
        assertThat(Scrape.values(
                        text, "blockpool_node_storage_problems{reason=\"PoolUnavailable\",severity=\"INACCESSIBLE\"}"))
                .containsExactly(1.0);
    }

    @Test
    void theFrozenVolumesAreCountedAtEachScrape() {
        PrometheusRegistry registry = new PrometheusRegistry();
        AtomicInteger frozen = new AtomicInteger(1);
        NodeGauges.registerFrozen(registry, frozen::get);

        assertThat(Scrape.values(Scrape.of(registry), "blockpool_node_frozen_volumes"))
                .containsExactly(1.0);
        frozen.set(0);
        assertThat(Scrape.values(Scrape.of(registry), "blockpool_node_frozen_volumes"))
                .containsExactly(0.0);
    }
}
