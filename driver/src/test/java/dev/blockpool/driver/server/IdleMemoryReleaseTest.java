package dev.blockpool.driver.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Metadata;
import io.grpc.ServerCall;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class IdleMemoryReleaseTest {

    private static final long MIB = 1L << 20;
    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final AtomicLong heap = new AtomicLong(20 * MIB);
    private final AtomicInteger collections = new AtomicInteger();
    private final IdleMemoryRelease release = IdleMemoryRelease.manual(now::get, heap::get, () -> {
        collections.incrementAndGet();
        heap.set(24 * MIB); // what a full collection leaves
    });

    @Test
    void aHeapGrownByABurstIsCollectedOnceTheCallsStop() {
        call();
        heap.set(120 * MIB);
        assertFalse(release.releaseIfIdle(), "a call just came: the burst may go on");

        now.addAndGet(IdleMemoryRelease.QUIET.toNanos());
        assertTrue(release.releaseIfIdle());
        assertEquals(1, collections.get());

        now.addAndGet(IdleMemoryRelease.QUIET.toNanos());
        assertFalse(release.releaseIfIdle(), "nothing grew since: an idle driver is left alone");
        assertEquals(1, collections.get());
    }

    @Test
    void probesThatGrowTheHeapLittleNeverCauseACollection() {
        for (int i = 0; i < 100; i++) {
            call();
            heap.addAndGet(IdleMemoryRelease.SLACK / 200); // half the slack in all
            now.addAndGet(IdleMemoryRelease.QUIET.toNanos());
            release.releaseIfIdle();
        }
        assertEquals(0, collections.get());
    }

    @SuppressWarnings("unchecked")
    private void call() {
        release.interceptCall((ServerCall<Object, Object>) null, new Metadata(), (c, h) -> null);
    }
}
