package dev.blockpool.peer;

/**
 * The bytes per second this node serves its peers, shared by every call: a token bucket that
 * holds at most one second's worth, so an idle node answers its next read at once and a busy one
 * paces every read behind the others. A read takes its bytes before it reads them, so the pool's
 * disk is paced too. Zero bytes per second is no limit.
 */
final class BandwidthLimit {

    /** Where the time comes from, and how to wait: System.nanoTime and Thread.sleep, or a test's. */
    interface Clock {
        long nanoTime();

        void sleepNanos(long nanos) throws InterruptedException;
    }

    static final Clock SYSTEM = new Clock() {
        @Override
        public long nanoTime() {
            return System.nanoTime();
        }

        @Override
        public void sleepNanos(long nanos) throws InterruptedException {
            Thread.sleep(nanos / 1_000_000, (int) (nanos % 1_000_000));
        }
    };

    private static final long SECOND = 1_000_000_000L;

    private final long bytesPerSecond;
    private final Clock clock;
    /** When the bytes taken so far have all gone at the limit's pace; the bucket is full once it is a second past. */
    private long paidUntil;

    BandwidthLimit(long bytesPerSecond, Clock clock) {
        if (bytesPerSecond < 0) {
            throw new IllegalArgumentException("a bandwidth is not negative");
        }
        this.bytesPerSecond = bytesPerSecond;
        this.clock = clock;
        this.paidUntil = clock.nanoTime() - SECOND;
    }

    static BandwidthLimit unlimited() {
        return new BandwidthLimit(0, SYSTEM);
    }

    long bytesPerSecond() {
        return bytesPerSecond;
    }

    /** Waits until {@code bytes} may be sent. */
    void take(int bytes) throws InterruptedException {
        if (bytesPerSecond == 0 || bytes <= 0) {
            return;
        }
        long wait = reserve(bytes);
        if (wait > 0) {
            clock.sleepNanos(wait);
        }
    }

    /** Books {@code bytes} after those already booked; how long until they may go. */
    private synchronized long reserve(int bytes) {
        long now = clock.nanoTime();
        // Time unused for more than a second is not saved up: the bucket holds one second's worth.
        paidUntil = Math.max(paidUntil, now - SECOND);
        paidUntil += (long) ((double) bytes * SECOND / bytesPerSecond);
        return paidUntil - now;
    }
}
