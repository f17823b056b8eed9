package dev.blockpool.driver.server;

import csi.v1.IdentityGrpc;
import csi.v1.NodeGrpc;
import io.grpc.MethodDescriptor;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedTransferQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The platform threads the calls that do not run in place run on, with a ceiling. A call left in a
 * system call on a pool that does not answer holds its thread (a virtual one would hold a carrier,
 * and other calls with it), so the threads are what a client or a dead pool could make grow: they
 * are made as calls come, end after {@link #KEEP_ALIVE} without one, and never number more than
 * {@link #MOST} for calls in general plus {@link #MOST_RELEASING} for the calls that let go of a
 * volume. Those (unpublish, unstage) and Probe have threads of their own, so that a pod can always
 * be torn down and livenessprobe answered, however many other calls are stuck.
 *
 * <p>gRPC cannot take a refusal from an executor, so the ceiling is kept at the door: a call that
 * comes when every thread of its kind is taken is placed in place, and {@link CallDeadlines}
 * answers it there at once (see {@link CallPlacement#refusedForWantOfThreads}). Work handed over
 * beyond the ceiling anyway (the next steps of calls under way, two transport threads racing for
 * the last one) waits for the next free thread rather than being lost.
 */
public final class CallThreads implements AutoCloseable {

    /**
     * Calls in general at once. The sidecars call with up to 100 workers between them, kubelet a
     * few per volume it acts on, and {@link CallDeadlines} refuses new calls once 64 are stuck: so
     * live calls still find threads when the most that can be stuck are.
     */
    static final int MOST = 192;
    /** Unpublish, unstage and Probe at once: kubelet tears down a few pods' volumes at a time. */
    static final int MOST_RELEASING = 16;
    /** How long a thread without a call is kept: an idle driver ends the threads a burst started. */
    static final Duration KEEP_ALIVE = Duration.ofSeconds(10);

    /** The calls on threads of their own, never refused for stuck calls nor for want of other threads. */
    static final Set<String> RELEASING = Stream.of(
                    NodeGrpc.getNodeUnpublishVolumeMethod(),
                    NodeGrpc.getNodeUnstageVolumeMethod(),
                    IdentityGrpc.getProbeMethod())
            .map(MethodDescriptor::getFullMethodName)
            .collect(Collectors.toUnmodifiableSet());

    private final Lane general;
    private final Lane releasing;

    public CallThreads() {
        this(MOST, MOST_RELEASING, KEEP_ALIVE);
    }

    CallThreads(int most, int mostReleasing, Duration keepAlive) {
        this.general = new Lane("call-", most, keepAlive);
        this.releasing = new Lane("call-release-", mostReleasing, keepAlive);
    }

    /** Where a call of {@code method} runs: its own lane, or null when every thread of that lane is taken. */
    Executor forCall(String method) {
        Lane lane = RELEASING.contains(method) ? releasing : general;
        return lane.full() ? null : lane;
    }

    /**
     * Threads for the rest of a call answered in place that has to wait after all (a stats call
     * whose path the kernel's caches do not resolve): refuses with {@link RejectedExecutionException}
     * when all are taken, for the call to be answered at once.
     */
    public Executor forRestOfInPlaceCall() {
        return work -> {
            if (general.full()) {
                throw new RejectedExecutionException("all %d threads for calls are busy".formatted(general.most));
            }
            general.execute(work);
        };
    }

    /** The most calls of {@code method}'s kind at once, for messages. */
    int mostFor(String method) {
        return (RELEASING.contains(method) ? releasing : general).most;
    }

    @Override
    public void close() {
        general.executor.shutdownNow();
        releasing.executor.shutdownNow();
    }

    /** One kind of call's threads: handed to an idle thread first, else to a new one up to the ceiling, else queued. */
    private static final class Lane implements Executor {
        private final int most;
        /** Work handed over and not yet done: what decides whether the lane is full. */
        private final AtomicInteger busy = new AtomicInteger();

        private final HandOff queue = new HandOff();
        private final ThreadPoolExecutor executor;

        Lane(String threadName, int most, Duration keepAlive) {
            this.most = most;
            this.executor = new ThreadPoolExecutor(
                    0,
                    most,
                    keepAlive.toMillis(),
                    TimeUnit.MILLISECONDS,
                    queue,
                    Thread.ofPlatform().name(threadName, 0).daemon().factory(),
                    (work, pool) -> {
                        if (!pool.isShutdown()) {
                            queue.enqueue(work); // every thread taken: the next one free takes it
                        }
                    });
        }

        boolean full() {
            return busy.get() >= most;
        }

        @Override
        public void execute(Runnable work) {
            busy.incrementAndGet();
            try {
                executor.execute(() -> {
                    try {
                        work.run();
                    } finally {
                        busy.decrementAndGet();
                    }
                });
            } catch (RuntimeException e) {
                busy.decrementAndGet();
                throw e;
            }
        }
    }

    /**
     * The lane's queue, as the executor sees it: an offer goes only to a thread waiting for work,
     * so that the executor makes a new thread rather than queueing while it may; past the ceiling
     * the work is {@linkplain #enqueue enqueued} for the next thread that is done.
     */
    private static final class HandOff extends LinkedTransferQueue<Runnable> {
        @Override
        public boolean offer(Runnable work) {
            return tryTransfer(work);
        }

        void enqueue(Runnable work) {
            super.offer(work);
        }
    }
}
