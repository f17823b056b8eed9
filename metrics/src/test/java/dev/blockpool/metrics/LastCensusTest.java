package dev.blockpool.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The census in the background: where it runs, and what a scrape shows while one hangs on the pool. */
class LastCensusTest {

    @Test
    void theCensusMakesItsSystemCallsOnAPlatformThread() throws Exception {
        // Blocked in a system call on a pool that does not answer, a virtual thread holds its carrier,
        // and with one carrier (a CPU limit of 1) the metrics endpoint's virtual threads with it.
        CompletableFuture<Thread> counting = new CompletableFuture<>();
        LastCensus<Long> census = LastCensus.start("pool", () -> {
            counting.complete(Thread.currentThread());
            return 1L;
        });
        try {
            assertThat(counting.get().isVirtual()).isFalse();
        } finally {
            census.close();
        }
    }

    @Test
    void aCensusThatHangsOnThePoolLeavesTheLastFiguresServedAndTheirAgeGrowing() throws Exception {
        Instant start = Instant.parse("2026-01-01T00:00:00Z");
        AtomicReference<Instant> now = new AtomicReference<>(start);
        AtomicInteger censuses = new AtomicInteger();
        CountDownLatch hangs = new CountDownLatch(1);
        CountDownLatch poolAnswers = new CountDownLatch(1);
        // one census at once, the next waits on a pool that does not answer
        LastCensus<Long> census = LastCensus.start(
                "pool",
                () -> {
                    if (censuses.incrementAndGet() == 1) {
                        return 3L;
                    }
                    hangs.countDown();
                    awaitQuietly(poolAnswers);
                    return 4L;
                },
                now::get,
                Duration.ZERO);
        PrometheusRegistry registry = new PrometheusRegistry();
        census.gauge(registry, "blockpool_pool_volumes", "Volumes in the pool", Long::doubleValue);
        census.timeGauges(registry);
        try {
            hangs.await();
            String atOnce = Scrape.of(registry);
            now.set(start.plusSeconds(90));
            String later = Scrape.of(registry);

            assertThat(Scrape.values(atOnce, "blockpool_pool_volumes")).containsExactly(3.0);
            assertThat(Scrape.values(later, "blockpool_pool_volumes")).containsExactly(3.0);
            assertThat(Scrape.values(atOnce, "blockpool_pool_census_age_seconds"))
                    .containsExactly(0.0);
            assertThat(Scrape.values(later, "blockpool_pool_census_age_seconds"))
                    .containsExactly(90.0);
            assertThat(Scrape.values(later, "blockpool_pool_census_timestamp_seconds"))
                    .containsExactly((double) start.getEpochSecond());
        } finally {
            poolAnswers.countDown();
            census.close();
        }
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
