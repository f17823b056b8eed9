package dev.blockpool.metrics;

import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BiConsumer;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The last census of something the gauges show, taken in the background every {@link #INTERVAL} (or
 * less often, see {@link #SPACING}): a scrape reads only what it left, so it costs the same however
 * much there is to count, and never waits on the pool or the host. Before the first census a gauge
 * has no sample, rather than a zero that would read as an empty pool.
 *
 * <p>The census runs on a platform thread of its own: its system calls on a pool that does not
 * answer wait in the kernel, and on a virtual thread they would hold its carrier, and with it
 * (one carrier under a CPU limit of 1) the metrics endpoint's virtual threads. Meanwhile a scrape
 * answers from the last census, and its age says how old that is.
 */
final class LastCensus<T> implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(LastCensus.class);
    /** As often as Prometheus scrapes by default; what a census costs: docs/performance-pool.md. */
    static final Duration INTERVAL = Duration.ofSeconds(30);
    /**
     * A census that takes long (a large pool on a busy node) waits this many times its own
     * duration before the next: the counting never takes more than a twentieth of a core.
     */
    static final int SPACING = 20;

    private final String what;
    private final Supplier<T> take;
    private final InstantSource clock;
    private final Duration interval;
    /** A census and when it was taken. */
    private record Taken<T>(T figures, Instant at) {}

    private volatile Optional<Taken<T>> last = Optional.empty();
    private volatile boolean stopped;
    private final Thread taker;

    private LastCensus(String what, Supplier<T> take, InstantSource clock, Optional<Duration> every) {
        this.what = what;
        this.take = take;
        this.clock = clock;
        this.interval = every.orElse(INTERVAL);
        this.taker = every.isPresent()
                ? Thread.ofPlatform().daemon().name(what + "-census").start(this::run)
                : null;
    }

    /** Takes a census of {@code what} now and every {@link #INTERVAL}, until {@link #close}. */
    static <T> LastCensus<T> start(String what, Supplier<T> take) {
        return start(what, take, InstantSource.system(), INTERVAL);
    }

    /** For tests: {@link #start}, telling the time by {@code clock}, a census every {@code interval}. */
    static <T> LastCensus<T> start(String what, Supplier<T> take, InstantSource clock, Duration interval) {
        return new LastCensus<>(what, take, clock, Optional.of(interval));
    }

    /** For tests: a census only when {@link #refresh} is called. */
    static <T> LastCensus<T> byHand(String what, Supplier<T> take) {
        return new LastCensus<>(what, take, InstantSource.system(), Optional.empty());
    }

    Optional<T> last() {
        return last.map(Taken::figures);
    }

    /** Takes a census now; a failure keeps the last one (its timestamp says how old it is) and is logged. */
    void refresh() {
        try {
            T figures = take.get();
            last = Optional.of(new Taken<>(figures, clock.instant()));
        } catch (RuntimeException e) {
            log.warn("cannot count the {} for its metrics: {}", what, e.getMessage());
        }
    }

    private void run() {
        while (!stopped) {
            long started = System.nanoTime();
            refresh();
            LockSupport.parkNanos(Math.max(interval.toNanos(), SPACING * (System.nanoTime() - started)));
        }
    }

    @Override
    public void close() {
        stopped = true;
        if (taker != null) {
            LockSupport.unpark(taker);
        }
    }

    /** A gauge of one figure of the last census. */
    void gauge(PrometheusRegistry registry, String name, String help, ToDoubleFunction<T> figure) {
        GaugeWithCallback.builder()
                .name(name)
                .help(help)
                .callback(callback -> last().ifPresent(census -> callback.call(figure.applyAsDouble(census))))
                .register(registry);
    }

    /** A gauge with labels: {@code series} gives the last census's samples, each with its label values. */
    void gauge(
            PrometheusRegistry registry,
            String name,
            String help,
            List<String> labelNames,
            BiConsumer<T, GaugeWithCallback.Callback> series) {
        GaugeWithCallback.builder()
                .name(name)
                .help(help)
                .labelNames(labelNames.toArray(String[]::new))
                .callback(callback -> last().ifPresent(census -> series.accept(census, callback)))
                .register(registry);
    }

    /**
     * {@code blockpool_<what>_census_timestamp_seconds} and {@code blockpool_<what>_census_age_seconds}:
     * when the figures were counted, and how long ago that is at the scrape; a census that hangs
     * on a pool that does not answer shows as an age that grows.
     */
    void timeGauges(PrometheusRegistry registry) {
        GaugeWithCallback.builder()
                .name("blockpool_" + what + "_census_timestamp_seconds")
                .help("When the " + what + " was last counted for these gauges, in seconds since the epoch")
                .callback(callback ->
                        last.ifPresent(taken -> callback.call(taken.at().toEpochMilli() / 1e3)))
                .register(registry);
        GaugeWithCallback.builder()
                .name("blockpool_" + what + "_census_age_seconds")
                .help("How long ago the " + what + " was last counted for these gauges, in seconds: it grows "
                        + "while a count does not finish")
                .callback(callback -> last.ifPresent(taken -> callback.call(
                        Duration.between(taken.at(), clock.instant()).toMillis() / 1e3)))
                .register(registry);
    }
}
