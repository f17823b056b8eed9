package dev.blockpool.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.pool.CapacityPolicy;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.PoolCensus;
import dev.blockpool.pool.VolumeSpecs;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Clock;
import java.time.Duration;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The pool's gauges as a scrape shows them, from a real pool in a temporary directory. */
class PoolGaugesTest {

    private static final long MiB = 1L << 20;

    @TempDir
    Path root;

    private final PrometheusRegistry registry = new PrometheusRegistry();

    @Test
    void aVolumeCreatedMovesTheProvisionedBytesAndTheCountAtTheNextCensus() {
        Pool pool = Pool.open(root, new ProcessCommandRunner(), Clock.systemUTC(), Duration.ofMinutes(10));
        LastCensus<PoolCensus.Figures> gauges = LastCensus.byHand("pool", pool::census);
        PoolGauges.register(registry, gauges);
        gauges.refresh();
        String before = Scrape.of(registry);

        pool.volumes().create(VolumeSpecs.sparse("pvc-1", 64 * MiB));
        gauges.refresh();
        String after = Scrape.of(registry);

        String provisioned = "blockpool_pool_provisioned_bytes{kind=\"volume\"}";
        assertThat(Scrape.values(before, provisioned)).containsExactly(0.0);
        assertThat(Scrape.values(after, provisioned)).containsExactly((double) (64 * MiB));
        assertThat(Scrape.values(after, "blockpool_pool_volumes")).containsExactly(1.0);
        double size = Scrape.values(after, "blockpool_pool_size_bytes").getFirst();
        assertThat(Scrape.values(after, "blockpool_pool_overcommit_ratio")).containsExactly(64 * MiB / size);
        assertThat(Scrape.values(before, "blockpool_pool_promised_bytes")).containsExactly(0.0);
        assertThat(Scrape.values(after, "blockpool_pool_promised_bytes")).containsExactly((double) (64 * MiB));
        assertThat(Scrape.values(after, "blockpool_pool_promise_limit_bytes"))
                .containsExactly((double) CapacityPolicy.DEFAULT.limitBytes((long) size));
    }

    @Test
    void aSnapshotPromisesTheBlocksItHoldsNotItsSize() throws Exception {
        Pool pool = Pool.open(root, new ProcessCommandRunner(), Clock.systemUTC(), Duration.ofMinutes(10));
        var volume = pool.volumes().create(VolumeSpecs.sparse("pvc-1", 64 * MiB));
        try (var image = FileChannel.open(pool.volumes().imagePath(volume.id()), StandardOpenOption.WRITE)) {
            byte[] data = new byte[(int) MiB];
            Arrays.fill(data, (byte) 1);
            image.write(ByteBuffer.wrap(data), 0);
        }
        pool.snapshots().create("snap-1", volume.id(), pool.volumes());
        LastCensus<PoolCensus.Figures> gauges = LastCensus.byHand("pool", pool::census);
        PoolGauges.register(registry, gauges);
        gauges.refresh();
        String scrape = Scrape.of(registry);

        double snapshotHolds = Scrape.values(scrape, "blockpool_pool_allocated_bytes{kind=\"snapshot\"}")
                .getFirst();
        assertThat(snapshotHolds).isBetween((double) MiB, 2.0 * MiB);
        assertThat(Scrape.values(scrape, "blockpool_pool_promised_bytes")).containsExactly(64 * MiB + snapshotHolds);
    }

    @Test
    void beforeTheFirstCensusThereIsNoFigureRatherThanAZero() {
        LastCensus<PoolCensus.Figures> census = LastCensus.byHand("pool", () -> {
            throw new IllegalStateException("the pool does not answer");
        });
        PoolGauges.register(registry, census);
        census.refresh();

        assertThat(Scrape.lines(Scrape.of(registry), "blockpool_pool_volumes")).isEmpty();
    }

    @Test
    void sharedBytesAreShownPerKindWhereTheFilesystemToldThemAndNotAtAllWhereItCouldNot() {
        String shared = "blockpool_pool_reflink_shared_bytes";

        String told = Scrape.of(registryOf(figures(true)));
        assertThat(Scrape.values(told, shared + "{kind=\"volume\"}")).containsExactly((double) (6 * MiB));
        assertThat(Scrape.values(told, shared + "{kind=\"snapshot\"}")).containsExactly((double) (5 * MiB));

        String notTold = Scrape.of(registryOf(figures(false)));
        assertThat(Scrape.lines(notTold, shared))
                .as("no zero that would read as nothing shared")
                .isEmpty();
        assertThat(Scrape.lines(notTold, "blockpool_pool_allocated_bytes")).hasSize(2);
    }

    /** A census of 2 volumes holding 8 MiB, 6 of them shared with 2 snapshots holding 5 MiB, all shared. */
    private static PoolCensus.Figures figures(boolean sharingTold) {
        return new PoolCensus.Figures(
                new PoolCensus.Images(2, 64 * MiB, 8 * MiB, sharingTold ? 6 * MiB : 0),
                new PoolCensus.Images(2, 64 * MiB, 5 * MiB, sharingTold ? 5 * MiB : 0),
                0,
                1024 * MiB,
                512 * MiB,
                sharingTold,
                Duration.ofMillis(1),
                64 * MiB + 5 * MiB,
                900 * MiB);
    }

    private static PrometheusRegistry registryOf(PoolCensus.Figures figures) {
        PrometheusRegistry registry = new PrometheusRegistry();
        LastCensus<PoolCensus.Figures> census = LastCensus.byHand("pool", () -> figures);
        PoolGauges.register(registry, census);
        census.refresh();
        return registry;
    }

    @Test
    void theBuildIsNamedOnce() {
        BuildInfo.register(registry, new BuildInfo.Build("blockpool.csi.dev", "1.2.3", "v1.13.0", "all", "node"));

        assertThat(Scrape.values(
                        Scrape.of(registry),
                        "blockpool_build_info{csi_spec_version=\"v1.13.0\",driver_name=\"blockpool.csi.dev\","
                                + "mode=\"all\",pool_scope=\"node\",version=\"1.2.3\"}"))
                .containsExactly(1.0);
    }
}
