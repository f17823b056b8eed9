package dev.blockpool.common;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * System calls that can hang (statfs, mount, umount, the open of a path, loop ioctls on an image
 * in a pool whose NFS server went away), each made on a small pool of platform threads of their
 * own, with a deadline. A hung one holds the thread that makes it (and a virtual thread's
 * carrier with it): here it takes one of these threads, and its caller gets an UNAVAILABLE error
 * at the deadline, as for a hung child process.
 *
 * <p>A thread in a system call cannot be interrupted: a call past its deadline is left to the
 * kernel and its thread counts as stuck until the call returns. Only {@link #THREADS} calls run
 * at once, so a dead filesystem holds at most that many threads; once every one is stuck, new
 * calls fail at once with a message saying so, instead of queueing behind calls that may never
 * return.
 */
public final class BlockingCalls {

    /**
     * How many such calls run at once: each normally takes microseconds, so this is ample for a
     * node's volumes, and it is the most threads a hung filesystem can ever hold.
     */
    public static final int THREADS = 16;

    private static final Logger log = LoggerFactory.getLogger(BlockingCalls.class);

    private final int threads;
    /** One per call in flight: taken before a call is handed over, given back when it returns. */
    private final Semaphore running;
    /** Calls past their deadline that have not returned yet. */
    private final AtomicInteger stuck = new AtomicInteger();

    private final ThreadPoolExecutor executor;
    private volatile String latestStuck = "";

    /**
     * How long a thread without a call is kept. A call is handed to the thread that finished one
     * last, so under a trickle of calls (a stats call now and then) one thread does the work and
     * the others a burst started end after this long: an idle node keeps none.
     */
    static final Duration KEEP_ALIVE = Duration.ofSeconds(10);

    /** The driver's calls: at most {@link #THREADS} at once, on daemon threads named "syscall-N", made as needed. */
    public BlockingCalls() {
        this("syscall", THREADS);
    }

    public BlockingCalls(String threadName, int threads) {
        this(threadName, threads, KEEP_ALIVE);
    }

    BlockingCalls(String threadName, int threads, Duration keepAlive) {
        this.threads = threads;
        this.running = new Semaphore(threads);
        // No queue: a call goes to the idle thread that went idle last, else to a new thread. The
        // semaphore bounds the calls, so there are about as many threads as calls in flight (a
        // thread whose call has just returned may not be idle yet), and a stuck call keeps its own.
        this.executor = new ThreadPoolExecutor(
                0,
                Integer.MAX_VALUE,
                keepAlive.toMillis(),
                TimeUnit.MILLISECONDS,
                new SynchronousQueue<>(),
                Thread.ofPlatform().name(threadName + "-", 0).daemon().factory());
    }

    /** Runs {@code work} on one of the threads; {@code what} names the call and its path for the errors. */
    public <T> T call(Duration deadline, String what, Supplier<T> work) {
        Outcome<T> outcome = attempt(deadline, what, work);
        if (!outcome.finished()) {
            throw StorageException.unavailable(
                    "%s did not finish within %s and is left waiting in the kernel", what, describe(deadline));
        }
        return outcome.value();
    }

    /**
     * {@link #call}, but a call past its deadline is an empty answer rather than an error: for a
     * caller for whom a filesystem that does not answer is a finding (a health check), not a failure.
     */
    public <T> Optional<T> answerWithin(Duration deadline, String what, Supplier<T> work) {
        Outcome<T> outcome = attempt(deadline, what, work);
        return outcome.finished() ? Optional.of(outcome.value()) : Optional.empty();
    }

    /** A deadline in words: "5 s", "5 min". */
    public static String describe(Duration deadline) {
        return deadline.toSecondsPart() == 0 && deadline.toMinutes() > 0
                ? deadline.toMinutes() + " min"
                : deadline.toMillis() % 1000 == 0 ? deadline.toSeconds() + " s" : deadline.toMillis() + " ms";
    }

    private record Outcome<T>(boolean finished, T value) {}

    private <T> Outcome<T> attempt(Duration deadline, String what, Supplier<T> work) {
        NoWaiting.refuse(what);
        long end = System.nanoTime() + deadline.toNanos();
        acquire(deadline, what);
        Call<T> call = new Call<>(what, work);
        try {
            executor.execute(call);
        } catch (RuntimeException e) {
            running.release();
            throw StorageException.internal(e, "cannot run %s: %s", what, e.getMessage());
        }
        try {
            return new Outcome<>(true, call.result.get(Math.max(0, end - System.nanoTime()), TimeUnit.NANOSECONDS));
        } catch (TimeoutException e) {
            if (call.abandon()) {
                return new Outcome<>(false, null);
            }
            return new Outcome<>(true, call.result.join()); // it returned just now
        } catch (InterruptedException e) {
            call.abandon();
            Thread.currentThread().interrupt();
            throw StorageException.internal("interrupted while waiting for %s", what);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException runtime) {
                throw runtime;
            }
            if (e.getCause() instanceof Error error) {
                throw error;
            }
            throw StorageException.internal(
                    e.getCause(), "%s failed: %s", what, e.getCause().getMessage());
        }
    }

    /** {@link #call} of work without a result. */
    public void run(Duration deadline, String what, Runnable work) {
        call(deadline, what, () -> {
            work.run();
            return null;
        });
    }

    /** The threads there are now, busy or idle. */
    int threadCount() {
        return executor.getPoolSize();
    }

    /** Calls past their deadline that have not returned yet. */
    public int stuck() {
        return stuck.get();
    }

    private void acquire(Duration deadline, String what) {
        if (running.tryAcquire()) {
            return;
        }
        try {
            // Busy with calls still within their deadlines: wait for one; stuck ones: give up now.
            if (stuck.get() < threads && running.tryAcquire(deadline.toNanos(), TimeUnit.NANOSECONDS)) {
                return;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw StorageException.internal("interrupted while waiting to run %s", what);
        }
        if (stuck.get() >= threads) {
            throw StorageException.unavailable(
                    "%s is refused: all %d threads for system calls that can hang are stuck "
                            + "in calls the kernel never returned from (the latest: %s); a filesystem of this "
                            + "node, likely the pool's, does not answer",
                    what, threads, latestStuck);
        }
        throw StorageException.unavailable(
                "%s could not start within %s: all %d threads for system calls that can " + "hang were busy",
                what, describe(deadline), threads);
    }

    /** One call: its result, and whether its caller gave up on it. */
    private final class Call<T> implements Runnable {
        private final String what;
        private final Supplier<T> work;
        private final CompletableFuture<T> result = new CompletableFuture<>();
        private final AtomicBoolean settled = new AtomicBoolean();
        private final long start = System.nanoTime();

        Call(String what, Supplier<T> work) {
            this.what = what;
            this.work = work;
        }

        @Override
        public void run() {
            try {
                result.complete(work.get());
            } catch (Throwable t) {
                result.completeExceptionally(t);
            } finally {
                if (!settled.compareAndSet(false, true)) {
                    stuck.decrementAndGet();
                    log.warn(
                            "{} returned after all, {} ms after it started",
                            what,
                            TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
                }
                running.release();
            }
        }

        /** Marks the call stuck, unless it has returned; says whether it did. */
        boolean abandon() {
            if (!settled.compareAndSet(false, true)) {
                return false;
            }
            latestStuck = what;
            int now = stuck.incrementAndGet();
            log.warn(
                    "{} has not returned; {} of {} threads for system calls that can hang are stuck",
                    what,
                    now,
                    threads);
            return true;
        }
    }
}
