package dev.blockpool.metrics;

import dev.blockpool.pool.PoolCensus;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pool's gauges, from its last {@link PoolCensus}: a scrape reads only what the census
 * left, so it costs the same at any number of volumes and never waits on the pool. The census
 * is taken in the background every {@link #INTERVAL}, by every process that serves the
 * controller; all of them count the whole pool, so processes sharing one report the same
 * figures, each as of its own last census ({@code blockpool_pool_census_timestamp_seconds}).
 */
public final class PoolGauges implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(PoolGauges.class);
    /** As often as Prometheus scrapes by default: a census costs one statx per image (docs/performance.md). */
    static final Duration INTERVAL = Duration.ofSeconds(30);

    private final Supplier<PoolCensus.Figures> census;
    private volatile Optional<PoolCensus.Figures> last = Optional.empty();
    private final Thread taker;
    private volatile boolean stopped;

    private PoolGauges(PrometheusRegistry registry, Supplier<PoolCensus.Figures> census, boolean background) {
        this.census = census;
        register(registry);
        this.taker = background ? Thread.ofVirtual().name("pool-census").start(this::run) : null;
    }

    /** Registers the gauges and takes a census now and every {@link #INTERVAL} in the background, until {@link #close}. */
    public static PoolGauges start(PrometheusRegistry registry, Supplier<PoolCensus.Figures> census) {
        return new PoolGauges(registry, census, true);
    }

    /** For tests: no census until {@link #refresh} is called. */
    static PoolGauges byHand(PrometheusRegistry registry, Supplier<PoolCensus.Figures> census) {
        return new PoolGauges(registry, census, false);
    }

    /** Takes a census now; a failure keeps the last one (its timestamp tells how old it is) and is logged. */
    void refresh() {
        try {
            last = Optional.of(census.get());
        } catch (RuntimeException e) {
            log.warn("cannot count the pool for its metrics: {}", e.getMessage());
        }
    }

    private void run() {
        while (!stopped) {
            refresh();
            LockSupport.parkNanos(INTERVAL.toNanos());
        }
    }

    @Override
    public void close() {
        stopped = true;
        if (taker != null) {
            LockSupport.unpark(taker);
        }
    }

    private void register(PrometheusRegistry registry) {
        gauge(registry, "blockpool_pool_size_bytes", "Size of the pool's filesystem", f -> f.sizeBytes());
        gauge(
                registry,
                "blockpool_pool_available_bytes",
                "Bytes free on the pool's filesystem for new images and for the growth of sparse ones",
                f -> f.availableBytes());
        imagesGauge(
                registry,
                "blockpool_pool_provisioned_bytes",
                "Bytes the images promise: the sum of the sizes of the volumes or snapshots",
                PoolCensus.Images::provisionedBytes);
        imagesGauge(
                registry,
                "blockpool_pool_allocated_bytes",
                "Bytes the images hold: the sum of their allocated blocks (extents shared by reflinks count in each image)",
                PoolCensus.Images::allocatedBytes);
        gauge(
                registry,
                "blockpool_pool_overcommit_ratio",
                "The bytes the volumes and snapshots promise over the pool's size: above 1, a full write of every one cannot fit",
                f -> f.sizeBytes() == 0
                        ? 0
                        : (double) (f.volumes().provisionedBytes()
                                        + f.snapshots().provisionedBytes())
                                / f.sizeBytes());
        gauge(
                registry,
                "blockpool_pool_volumes",
                "Volumes in the pool",
                f -> f.volumes().count());
        gauge(
                registry,
                "blockpool_pool_snapshots",
                "Snapshots in the pool",
                f -> f.snapshots().count());
        gauge(registry, "blockpool_pool_group_snapshots", "Group snapshots in the pool", f -> f.groupSnapshots());
        gauge(
                registry,
                "blockpool_pool_census_timestamp_seconds",
                "When the pool was last counted for these gauges, in seconds since the epoch",
                f -> f.takenAt().toEpochMilli() / 1e3);
        gauge(
                registry,
                "blockpool_pool_census_duration_seconds",
                "How long the last count of the pool took",
                f -> f.took().toNanos() / 1e9);
    }

    private interface Figure {
        double of(PoolCensus.Figures figures);
    }

    private void gauge(PrometheusRegistry registry, String name, String help, Figure figure) {
        GaugeWithCallback.builder()
                .name(name)
                .help(help)
                .callback(callback -> last.ifPresent(f -> callback.call(figure.of(f))))
                .register(registry);
    }

    /** One gauge with a series for the volumes and one for the snapshots ({@code kind}). */
    private void imagesGauge(
            PrometheusRegistry registry,
            String name,
            String help,
            java.util.function.ToLongFunction<PoolCensus.Images> figure) {
        GaugeWithCallback.builder()
                .name(name)
                .help(help)
                .labelNames("kind")
                .callback(callback -> last.ifPresent(f -> {
                    callback.call(figure.applyAsLong(f.volumes()), "volume");
                    callback.call(figure.applyAsLong(f.snapshots()), "snapshot");
                }))
                .register(registry);
    }
}
