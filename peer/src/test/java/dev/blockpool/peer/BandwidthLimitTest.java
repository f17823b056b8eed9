package dev.blockpool.peer;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The token bucket, on a clock that moves only when the limit sleeps or the test says. */
class BandwidthLimitTest {

    private static final int RATE = 1000;

    @Test
    void aSecondsWorthGoesAtOnceAndTheRestAtTheRate() throws Exception {
        PeerServerBoundsTest.FakeClock clock = new PeerServerBoundsTest.FakeClock();
        BandwidthLimit limit = new BandwidthLimit(RATE, clock);

        limit.take(RATE);
        limit.take(RATE / 2);
        limit.take(RATE / 4);

        assertThat(clock.slept()).containsExactly(millis(500), millis(250));
    }

    @Test
    void timeLeftUnusedIsSavedForOneSecondOnly() throws Exception {
        PeerServerBoundsTest.FakeClock clock = new PeerServerBoundsTest.FakeClock();
        BandwidthLimit limit = new BandwidthLimit(RATE, clock);

        clock.sleepNanos(TimeUnit.SECONDS.toNanos(10)); // idle
        limit.take(RATE);
        limit.take(RATE);

        assertThat(clock.slept()).containsExactly(TimeUnit.SECONDS.toNanos(10), TimeUnit.SECONDS.toNanos(1));
    }

    @Test
    void zeroIsNoLimit() throws Exception {
        PeerServerBoundsTest.FakeClock clock = new PeerServerBoundsTest.FakeClock();
        BandwidthLimit limit = new BandwidthLimit(0, clock);

        limit.take(Integer.MAX_VALUE);
        limit.take(Integer.MAX_VALUE);

        assertThat(clock.slept()).isEmpty();
    }

    private static long millis(int n) {
        return TimeUnit.MILLISECONDS.toNanos(n);
    }
}
