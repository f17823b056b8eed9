package dev.blockpool.peer;

import dev.blockpool.csi.StatusInterceptor;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Where the peer server's calls run: a few platform threads of their own, none queued behind
 * them (a call that finds them all busy is answered RESOURCE_EXHAUSTED at once, and the peer
 * retries), each call answered by its deadline (UNAVAILABLE, its thread interrupted, when the
 * work has not finished by then). Failures become the status the CSI socket would answer, through
 * {@link StatusInterceptor#statusOf}.
 */
final class PeerCalls implements AutoCloseable {

    /**
     * Set while a call serves a peer: work done on behalf of a peer never reaches out to the peers
     * again, so a forwarded request cannot go round the nodes.
     */
    static final Context.Key<Boolean> SERVING_A_PEER = Context.key("blockpool-serving-a-peer");

    private final ThreadPoolExecutor threads;
    private final ScheduledExecutorService deadlines;
    private final Duration deadline;

    PeerCalls(int threadCount, Duration deadline) {
        this.threads = new ThreadPoolExecutor(
                threadCount,
                threadCount,
                1,
                TimeUnit.MINUTES,
                new SynchronousQueue<>(),
                Thread.ofPlatform().name("peer-call-", 0).daemon().factory());
        this.threads.allowCoreThreadTimeOut(true);
        this.deadlines = Executors.newSingleThreadScheduledExecutor(
                Thread.ofPlatform().name("peer-deadlines").daemon().factory());
        this.deadline = deadline;
    }

    static boolean servingAPeer() {
        return Boolean.TRUE.equals(SERVING_A_PEER.get());
    }

    /** Answers {@code observer} with what {@code work} returns, on a thread of its own, by the deadline. */
    <R> void run(String method, StreamObserver<R> observer, Callable<R> work) {
        ServerCallStreamObserver<R> call = (ServerCallStreamObserver<R>) observer;
        AtomicBoolean answered = new AtomicBoolean();
        AtomicReference<Future<?>> running = new AtomicReference<>();
        ScheduledFuture<?> timeout = deadlines.schedule(
                () -> {
                    fail(
                            call,
                            answered,
                            Status.fromCode(StatusInterceptor.RETRY_LATER)
                                    .withDescription("this node did not finish the call within " + deadline.toSeconds()
                                            + "s: its pool is slow or busy; retry later"));
                    stop(running);
                },
                deadline.toMillis(),
                TimeUnit.MILLISECONDS);
        call.setOnCancelHandler(() -> {
            // the peer went, or its own deadline passed: stop the work done for nobody
            answered.set(true);
            stop(running);
            timeout.cancel(false);
        });
        call.setOnCloseHandler(() -> timeout.cancel(false));
        Context context = Context.current().withValue(SERVING_A_PEER, true);
        try {
            running.set(threads.submit(context.wrap(() -> {
                R response;
                try {
                    response = work.call();
                } catch (Throwable failure) {
                    fail(call, answered, statusOf(method, failure));
                    return;
                }
                if (answered.compareAndSet(false, true)) {
                    call.onNext(response);
                    call.onCompleted();
                }
            })));
        } catch (RejectedExecutionException full) {
            timeout.cancel(false);
            fail(
                    call,
                    answered,
                    Status.RESOURCE_EXHAUSTED.withDescription(
                            "this node is serving as many peer calls as it runs at once ("
                                    + threads.getMaximumPoolSize() + "); retry shortly"));
        }
    }

    private static void stop(AtomicReference<Future<?>> running) {
        Future<?> work = running.get();
        if (work != null) {
            work.cancel(true);
        }
    }

    private static Status statusOf(String method, Throwable failure) {
        if (failure instanceof InterruptedException) {
            return Status.fromCode(StatusInterceptor.RETRY_LATER).withDescription("the call was stopped; retry later");
        }
        return StatusInterceptor.statusOf(method, failure);
    }

    private static void fail(ServerCallStreamObserver<?> call, AtomicBoolean answered, Status status) {
        if (answered.compareAndSet(false, true)) {
            call.onError(status.asRuntimeException());
        }
    }

    @Override
    public void close() {
        threads.shutdownNow();
        deadlines.shutdownNow();
    }
}
