package dev.blockpool.metrics;

import dev.blockpool.pool.PoolCensus;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.List;
import java.util.function.Predicate;
import java.util.function.ToLongFunction;

/**
 * The pool's gauges, from its last {@link PoolCensus}. Every process that serves the controller
 * counts the whole pool, so processes sharing one report the same figures, each as of its own
 * last census ({@code blockpool_pool_census_timestamp_seconds}).
 */
final class PoolGauges {

    private PoolGauges() {}

    static void register(PrometheusRegistry registry, LastCensus<PoolCensus.Figures> census) {
        census.gauge(registry, "blockpool_pool_size_bytes", "Size of the pool's filesystem", f -> f.sizeBytes());
        census.gauge(
                registry,
                "blockpool_pool_available_bytes",
                "Bytes free on the pool's filesystem for new images and for the growth of sparse ones",
                f -> f.availableBytes());
        images(
                registry,
                census,
                "blockpool_pool_provisioned_bytes",
                "Bytes the images promise: the sum of the sizes of the volumes or snapshots",
                always -> true,
                PoolCensus.Images::provisionedBytes);
        images(
                registry,
                census,
                "blockpool_pool_allocated_bytes",
                "Bytes the images hold: their allocated blocks, extents shared by reflinks counted in each image",
                always -> true,
                PoolCensus.Images::allocatedBytes);
        images(
                registry,
                census,
                "blockpool_pool_reflink_shared_bytes",
                "Bytes of the images' extents that the pool's filesystem flags shared by reflinks, counted in each"
                        + " image that shares them: a volume's need blocks of their own when written, a snapshot's"
                        + " allocated bytes beyond them are its own; no sample where the filesystem maps no extents"
                        + " (NFS, tmpfs)",
                PoolCensus.Figures::sharingTold,
                PoolCensus.Images::sharedBytes);
        census.gauge(
                registry,
                "blockpool_pool_promised_bytes",
                "Bytes the pool has promised: the volumes' sizes and the blocks the snapshots hold, which become their"
                        + " own when their volumes rewrite them",
                f -> f.promisedBytes());
        census.gauge(
                registry,
                "blockpool_pool_promise_limit_bytes",
                "The most the pool may promise: its size times --overcommit-ratio, less --pool-reserve",
                f -> f.promiseLimitBytes());
        census.gauge(
                registry,
                "blockpool_pool_overcommit_ratio",
                "Bytes the pool has promised over its size: above 1, they cannot all be written",
                f -> f.sizeBytes() == 0 ? 0 : (double) f.promisedBytes() / f.sizeBytes());
        census.gauge(
                registry,
                "blockpool_pool_volumes",
                "Volumes in the pool",
                f -> f.volumes().count());
        census.gauge(
                registry,
                "blockpool_pool_snapshots",
                "Snapshots in the pool",
                f -> f.snapshots().count());
        census.gauge(
                registry, "blockpool_pool_group_snapshots", "Group snapshots in the pool", f -> f.groupSnapshots());
        census.timeGauges(registry);
        census.gauge(
                registry,
                "blockpool_pool_census_duration_seconds",
                "How long the last count of the pool took",
                f -> f.took().toNanos() / 1e9);
    }

    /**
     * One gauge with a series for the volumes and one for the snapshots ({@code kind}), when the census {@code told}
     * it.
     */
    private static void images(
            PrometheusRegistry registry,
            LastCensus<PoolCensus.Figures> census,
            String name,
            String help,
            Predicate<PoolCensus.Figures> told,
            ToLongFunction<PoolCensus.Images> figure) {
        census.gauge(registry, name, help, List.of("kind"), (f, series) -> {
            if (told.test(f)) {
                series.call(figure.applyAsLong(f.volumes()), "volume");
                series.call(figure.applyAsLong(f.snapshots()), "snapshot");
            }
        });
    }
}
