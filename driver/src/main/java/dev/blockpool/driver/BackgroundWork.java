package dev.blockpool.driver;

import dev.blockpool.common.OperationLocks;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.ReconcileSteps;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the driver does beside its calls: the pool's reconcile, and in the acting controller the
 * repair of the attachment index after it; the node's warm-up. {@link #stop} ends it all and
 * waits for it: the reconcile ends between two of its steps (a step under way finishes, no
 * other starts), a run not yet started never starts, and nothing of it writes in the pool once
 * {@link #stop} has returned.
 */
final class BackgroundWork {

    private static final Logger log = LoggerFactory.getLogger(BackgroundWork.class);
    /** Logged at info once a reconcile of the pool has run to its end: what a watcher of the log waits for. */
    static final String RECONCILE_DONE = "pool reconcile done";
    /** The longest a look's thread waits without seeing whether the stop was asked for. */
    static final Duration STOP_CHECK = Duration.ofSeconds(1);
    /** How long a stop waits for a step that the interrupt ended, once the grace period is spent. */
    private static final Duration AFTER_INTERRUPT = Duration.ofSeconds(5);

    private final ScheduledThreadPoolExecutor reconcile;
    private final List<Thread> threads = new ArrayList<>();
    private final CountDownLatch stopRequested = new CountDownLatch(1);
    private volatile boolean stopping;

    private BackgroundWork(ScheduledThreadPoolExecutor reconcile) {
        this.reconcile = reconcile;
    }

    /**
     * Schedules the pool's reconcile {@code delay} after now, repeated every {@code every} when
     * {@code repeat} (the controller's) and else once; {@code steps} is told before each step.
     */
    static BackgroundWork start(
            Pool pool, OperationLocks locks, boolean repeat, Duration delay, Duration every, ReconcileSteps steps) {
        ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(
                1, Thread.ofPlatform().name("pool-reconcile").daemon().factory());
        // A run not yet started when the driver stops never starts.
        executor.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
        executor.setContinueExistingPeriodicTasksAfterShutdownPolicy(false);
        BackgroundWork work = new BackgroundWork(executor);
        ReconcileSteps checked = step -> {
            steps.before(step);
            if (work.stopping) {
                throw new CancellationException("the driver is stopping");
            }
        };
        Runnable run = () -> {
            try {
                pool.reconcile(locks, checked);
                // The attachment index is the acting controller's to repair, never a node's or a standby's.
                if (repeat) {
                    checked.before("reindex attachments");
                    if (pool.controllerClaim().problem().isEmpty()) {
                        pool.attachments().reindex();
                    }
                }
                checked.before("done");
                log.info(RECONCILE_DONE);
            } catch (CancellationException e) {
                log.info("pool reconcile ended early: {}", e.getMessage());
            } catch (RuntimeException e) {
                log.error("pool reconcile failed{}: {}", repeat ? "; retrying in " + every : "", e.getMessage(), e);
            }
        };
        if (repeat) {
            executor.scheduleWithFixedDelay(run, delay.toMillis(), every.toMillis(), TimeUnit.MILLISECONDS);
        } else {
            // Once, and then its thread ends: a node plugin keeps no thread for it.
            executor.schedule(
                    () -> {
                        run.run();
                        executor.shutdown();
                    },
                    delay.toMillis(),
                    TimeUnit.MILLISECONDS);
        }
        return work;
    }

    /**
     * Runs {@code look} every {@code period} until the stop, on a thread of its own; a look that
     * fails is logged and the next one runs.
     */
    synchronized void every(Duration period, String name, Runnable look) {
        every(period, name, look, limit -> {
            stopRequested.await(limit.toNanos(), TimeUnit.NANOSECONDS);
            return false;
        });
    }

    /** What can call for a look before its period is over: waits at most {@code limit}, true when it did. */
    @FunctionalInterface
    interface Sooner {
        boolean await(Duration limit) throws InterruptedException;
    }

    /**
     * {@link #every(Duration, String, Runnable)}, and also as soon as {@code sooner} calls for a
     * look; it is asked for at most {@link #STOP_CHECK} at a time, so that the stop is seen soon.
     */
    synchronized void every(Duration period, String name, Runnable look, Sooner sooner) {
        Thread thread = Thread.ofPlatform().daemon().name(name).unstarted(() -> {
            try {
                long next = System.nanoTime() + period.toNanos();
                while (stopRequested.getCount() > 0) {
                    long left = next - System.nanoTime();
                    boolean called = left > 0 && sooner.await(Duration.ofNanos(Math.min(left, STOP_CHECK.toNanos())));
                    if (stopRequested.getCount() == 0) {
                        return;
                    }
                    if (called || System.nanoTime() - next >= 0) {
                        try {
                            look.run();
                        } catch (RuntimeException e) {
                            log.warn("{} failed: {}", name, e.getMessage());
                        }
                        next = System.nanoTime() + period.toNanos();
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        threads.add(thread);
        thread.start();
    }

    /** Adds a thread for {@link #stop} to wait for; it must end by itself, soon. */
    synchronized void add(Thread thread) {
        threads.add(thread);
    }

    /** Asks everything to end, without waiting: runs not started never start. */
    void requestStop() {
        stopping = true;
        reconcile.shutdown();
        stopRequested.countDown();
    }

    /** For tests: returns once {@link #requestStop} has been called. */
    void awaitStopRequested() throws InterruptedException {
        stopRequested.await();
    }

    /**
     * {@link #requestStop}, then waits until everything has ended, until {@code deadline} (a
     * {@link System#nanoTime()}); past it, interrupts the reconcile and waits a little more.
     * True when everything ended.
     */
    boolean stop(long deadline) {
        requestStop();
        try {
            boolean ended = reconcile.awaitTermination(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (!ended) {
                log.warn("the pool reconcile is still running after the grace period; interrupting it");
                reconcile.shutdownNow();
                ended = reconcile.awaitTermination(AFTER_INTERRUPT.toNanos(), TimeUnit.NANOSECONDS);
            }
            for (Thread thread : threadsToWaitFor()) {
                long left = Math.max(deadline - System.nanoTime(), AFTER_INTERRUPT.toNanos());
                if (!thread.join(Duration.ofNanos(left))) {
                    log.warn("background thread {} did not end in time", thread.getName());
                    ended = false;
                }
            }
            return ended;
        } catch (InterruptedException e) {
            reconcile.shutdownNow();
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Whether nothing of it runs any more. */
    boolean ended() {
        return reconcile.isTerminated() && threadsToWaitFor().stream().noneMatch(Thread::isAlive);
    }

    private synchronized List<Thread> threadsToWaitFor() {
        return List.copyOf(threads);
    }
}
