package dev.blockpool.driver.server;

import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Gives the heap a burst of calls grew back to the host once the calls stop. The serial
 * collector, chosen for its footprint (docs/performance-memory.md), shrinks the heap only when it
 * collects all of it, and an idle driver makes too little garbage to start such a collection: a
 * node plugin would keep its peak for good. So when no call has come for {@link #QUIET} and the
 * heap holds more than {@link #SLACK} beyond what it held after the last release, one full
 * collection returns it, which is what G1's {@code G1PeriodicGCInterval} does for G1 (the
 * collector gives it all back at once: {@code -XX:-ShrinkHeapInSteps} in {@code bin/jvm.options}).
 * Probes every few seconds grow the heap by little, so an idle driver is left alone. Memory the
 * C library keeps after a burst is returned by the JVM's {@code -XX:TrimNativeHeapInterval}.
 *
 * <p>Once it has looked, the watcher waits for the next call rather than for a timer: a driver
 * without calls runs nothing on the virtual-thread scheduler, which then ends the carrier threads
 * that a burst's blocking file I/O added to it (it ends them only after 30 s without any task).
 */
public final class IdleMemoryRelease implements ServerInterceptor, AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(IdleMemoryRelease.class);
    static final Duration QUIET = Duration.ofSeconds(10);
    static final long SLACK = 4L << 20;
    private static final Duration STOP_WAIT = Duration.ofSeconds(5);

    private final LongSupplier nanoClock;
    private final LongSupplier committedHeap;
    private final Runnable collect;
    private final AtomicLong lastCall;
    private long committedAfterRelease;
    private final Thread watcher;
    /** The watcher while it waits for a call, for the call to wake it; else null. */
    private volatile Thread waitingForCall;

    private IdleMemoryRelease(LongSupplier nanoClock, LongSupplier committedHeap, Runnable collect, boolean watch) {
        this.nanoClock = nanoClock;
        this.committedHeap = committedHeap;
        this.collect = collect;
        this.lastCall = new AtomicLong(nanoClock.getAsLong());
        this.committedAfterRelease = committedHeap.getAsLong();
        this.watcher = watch ? Thread.ofVirtual().name("idle-memory-release").start(this::watch) : null;
    }

    /** Watches this JVM's heap from a virtual thread until {@link #close}. */
    public static IdleMemoryRelease start() {
        Runtime runtime = Runtime.getRuntime();
        return new IdleMemoryRelease(System::nanoTime, runtime::totalMemory, System::gc, true);
    }

    /** For tests: nothing runs by itself; {@link #releaseIfIdle} is called by hand. */
    static IdleMemoryRelease manual(LongSupplier nanoClock, LongSupplier committedHeap, Runnable collect) {
        return new IdleMemoryRelease(nanoClock, committedHeap, collect, false);
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        lastCall.set(nanoClock.getAsLong());
        Thread waiting = waitingForCall;
        if (waiting != null) {
            LockSupport.unpark(waiting);
        }
        return next.startCall(call, headers);
    }

    /** One look: collects when the calls have stopped and the heap grew; true when it did. */
    synchronized boolean releaseIfIdle() {
        boolean quiet = nanoClock.getAsLong() - lastCall.get() >= QUIET.toNanos();
        long before = committedHeap.getAsLong();
        if (!quiet || before <= committedAfterRelease + SLACK) {
            return false;
        }
        collect.run();
        committedAfterRelease = committedHeap.getAsLong();
        log.debug("calls stopped: heap {} MiB -> {} MiB", before >> 20, committedAfterRelease >> 20);
        return true;
    }

    private void watch() {
        try {
            while (!Thread.currentThread().isInterrupted()) {
                long quietFor = nanoClock.getAsLong() - lastCall.get();
                if (quietFor < QUIET.toNanos()) {
                    Thread.sleep(Duration.ofNanos(QUIET.toNanos() - quietFor));
                    continue;
                }
                releaseIfIdle();
                awaitCall();
            }
        } catch (InterruptedException stopped) {
            // close()
        }
    }

    /** Returns once a call has come since this was called (or at once when interrupted). */
    private void awaitCall() throws InterruptedException {
        long seen = lastCall.get();
        waitingForCall = Thread.currentThread();
        try {
            // A call between reading lastCall and setting waitingForCall is seen here, not missed.
            while (lastCall.get() == seen) {
                LockSupport.park(this);
                if (Thread.interrupted()) {
                    throw new InterruptedException();
                }
            }
        } finally {
            waitingForCall = null;
        }
    }

    /** Ends the watcher and waits for it: no collection starts after this returns. */
    @Override
    public void close() {
        if (watcher != null) {
            watcher.interrupt();
            try {
                // it only sleeps, parks and collects: the interrupt ends it at once or after one collection
                if (!watcher.join(STOP_WAIT)) {
                    log.warn("the idle memory release did not end within {} s", STOP_WAIT.toSeconds());
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Whether the watcher has ended (or never ran). */
    public boolean ended() {
        return watcher == null || !watcher.isAlive();
    }
}
