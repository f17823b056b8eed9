package dev.blockpool.driver.server;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.csi.StatusInterceptor;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every call on a thread of its own is answered by its deadline, whatever that thread waits on. A
 * pool whose server (NFS, GlusterFS, a FUSE daemon) stops answering leaves the thread of a call
 * that reads it in a system call nothing can interrupt; the caller is answered {@link
 * StatusInterceptor#RETRY_LATER} shortly before its own deadline (the client's, from its
 * grpc-timeout, else {@link #WITHOUT_DEADLINE}), while the thread goes on in the kernel until the
 * pool answers again. What that thread answers then is dropped; the caller's retry finds what it
 * did, every call being idempotent, or the volume's lock still held ({@code ABORTED}).
 *
 * <p>Calls past their deadlines hold their threads, so they are counted: while {@link #MOST_STUCK}
 * run on, new calls are refused at once rather than adding threads that may never return. A call
 * whose client gave it longer than {@link #WITHOUT_DEADLINE} counts from then on too, although it is
 * answered only at its own deadline. The calls that let go of a volume and Probe are never refused
 * ({@link CallThreads#RELEASING}): unpublish and unstage work without the pool, and livenessprobe
 * restarts a driver that does not answer Probe, whose own look at the pool has a short deadline. A
 * call that finds no thread of its own free is refused here too. The calls answered in place run
 * no such work and are left alone.
 *
 * <p>A stream (SnapshotMetadata) whose client gives it no deadline may rightly run for hours over
 * a large snapshot: it is answered only once it has sent nothing for {@link #WITHOUT_DEADLINE}
 * (its reader stopped taking messages, or its pool stopped answering), so that one that makes
 * progress goes on and one that does not lets go of what it holds.
 */
public final class CallDeadlines implements ServerInterceptor {

    private static final Logger log = LoggerFactory.getLogger(CallDeadlines.class);

    /** How long a call without a deadline of its own may take: kubelet's own deadline for a node call. */
    static final Duration WITHOUT_DEADLINE = Duration.ofMinutes(2);
    /**
     * How far ahead of its deadline a call is answered, so that the answer reaches the client before
     * it gives up, on a loaded machine too: a quarter of the time it was given, at most this.
     */
    private static final Duration AHEAD = Duration.ofSeconds(1);
    /** How many calls past their deadlines may hold their threads before new calls are refused. */
    static final int MOST_STUCK = 64;

    /**
     * How often the calls under way are looked at. A timer per call would wake a thread for every
     * call (each new deadline the nearest), which costs a node call more than the rest of this.
     */
    private static final Duration SWEEP = Duration.ofMillis(100);
    /** How long the thread that looks at them stays once no call is under way. */
    private static final Duration SWEEPER_KEEP_ALIVE = Duration.ofSeconds(10);

    private final int mostStuck;
    /** The threads calls run on: how many a refusal says are taken. */
    private final CallThreads threads;

    private final AtomicInteger stuck = new AtomicInteger();
    /** The calls under way, each until it is answered. */
    private final Set<Answered<?, ?>> underWay = ConcurrentHashMap.newKeySet();
    /** Whether a thread looks at {@link #underWay}; one starts with the first call after a quiet time. */
    private final AtomicBoolean sweeping = new AtomicBoolean();

    /** How long a call may run before it counts as stuck, when its deadline is later or it has none. */
    private final Duration withoutDeadline;

    /** Over the calls that run on {@code threads}. */
    public CallDeadlines(CallThreads threads) {
        this(MOST_STUCK, threads, WITHOUT_DEADLINE);
    }

    CallDeadlines(int mostStuck, CallThreads threads, Duration withoutDeadline) {
        this.mostStuck = mostStuck;
        this.threads = threads;
        this.withoutDeadline = withoutDeadline;
    }

    /** Calls past their deadlines whose threads have not returned yet. */
    int stuck() {
        return stuck.get();
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        String method = call.getMethodDescriptor().getFullMethodName();
        if (CallPlacement.refusedForWantOfThreads(method)) {
            return refused(
                    call,
                    "refused: all %d threads for calls are busy, most likely with calls waiting on a pool whose "
                            + "filesystem does not answer; retry later",
                    threads.mostFor(method));
        }
        if (CallPlacement.IN_PLACE.contains(method)) {
            return next.startCall(call, headers);
        }
        int held = stuck.get();
        if (held >= mostStuck && !CallThreads.RELEASING.contains(method)) {
            return refused(
                    call,
                    "refused: %d calls are still running past their deadlines, most likely waiting in the kernel on "
                            + "a pool whose filesystem does not answer; retry later",
                    held);
        }
        Deadline deadline = Context.current().getDeadline();
        long left = deadline == null ? withoutDeadline.toNanos() : deadline.timeRemaining(TimeUnit.NANOSECONDS);
        long answerIn = Math.max(0, left - Math.min(left / 4, AHEAD.toNanos()));
        boolean whileItSends =
                deadline == null && !call.getMethodDescriptor().getType().serverSendsOneMessage();
        Answered<Q, R> answered = new Answered<>(
                call,
                Duration.ofNanos(answerIn),
                whileItSends ? Long.MAX_VALUE : Math.min(answerIn, withoutDeadline.toNanos()),
                whileItSends);
        underWay.add(answered);
        if (sweeping.compareAndSet(false, true)) {
            Thread.ofPlatform().name("call-deadlines").daemon().start(this::sweep);
        }
        return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(
                next.startCall(answered, headers)) {
            @Override
            public void onHalfClose() {
                if (!answered.begin()) {
                    return; // answered at its deadline before it began: nothing is left to do
                }
                try {
                    super.onHalfClose();
                } finally {
                    answered.end();
                }
            }

            @Override
            public void onComplete() {
                underWay.remove(answered);
                super.onComplete();
            }

            @Override
            public void onCancel() {
                underWay.remove(answered);
                super.onCancel();
            }
        };
    }

    private static <Q, R> ServerCall.Listener<Q> refused(ServerCall<Q, R> call, String why, int count) {
        call.close(
                Status.fromCode(StatusInterceptor.RETRY_LATER).withDescription(why.formatted(count)), new Metadata());
        return new ServerCall.Listener<>() {};
    }

    /** Answers the calls past their deadlines, every {@link #SWEEP}, until no call has come for a while. */
    private void sweep() {
        long quietSince = System.nanoTime();
        while (true) {
            try {
                Thread.sleep(SWEEP);
            } catch (InterruptedException e) {
                sweeping.set(false);
                return;
            }
            long now = System.nanoTime();
            for (Answered<?, ?> call : underWay) {
                if (now - call.stuckFrom >= 0) {
                    call.countIfStillRunning();
                }
                if (now - call.answerBy >= 0 && call.expire()) {
                    underWay.remove(call);
                }
            }
            if (!underWay.isEmpty()) {
                quietSince = now;
            } else if (now - quietSince > SWEEPER_KEEP_ALIVE.toNanos()) {
                sweeping.set(false);
                // a call that came meanwhile finds it stopped and starts another, or this one goes on
                if (underWay.isEmpty() || !sweeping.compareAndSet(false, true)) {
                    return;
                }
            }
        }
    }

    /** A call that is answered once: by its service, or at its deadline, whichever comes first. */
    private final class Answered<Q, R> extends ForwardingServerCall.SimpleForwardingServerCall<Q, R> {
        private final Duration within;
        /** A stream without a client deadline: each message it sends gives it {@link #within} again. */
        private final boolean whileItSends;

        private volatile long answerBy;
        /** When a call still running counts as stuck: at its deadline, or sooner for a far one. */
        private final long stuckFrom;

        private boolean closed;
        private boolean running;
        private boolean heldPastDeadline;

        Answered(ServerCall<Q, R> call, Duration within, long stuckAfterNanos, boolean whileItSends) {
            super(call);
            this.within = within;
            this.whileItSends = whileItSends;
            long now = System.nanoTime();
            this.answerBy = now + within.toNanos();
            this.stuckFrom = stuckAfterNanos == Long.MAX_VALUE ? Long.MAX_VALUE : now + stuckAfterNanos;
        }

        @Override
        public synchronized void sendHeaders(Metadata headers) {
            if (!closed) {
                super.sendHeaders(headers);
            }
        }

        @Override
        public synchronized void sendMessage(R message) {
            if (!closed) {
                super.sendMessage(message);
                if (whileItSends) {
                    answerBy = System.nanoTime() + within.toNanos();
                }
            }
        }

        @Override
        public synchronized void close(Status status, Metadata trailers) {
            if (!closed) {
                closed = true;
                super.close(status, trailers);
            }
        }

        /** Whether the service is to run the call: not once it has been answered. */
        synchronized boolean begin() {
            running = !closed;
            return running;
        }

        synchronized void end() {
            running = false;
            if (heldPastDeadline) {
                int now = stuck.decrementAndGet();
                log.warn(
                        "{} returned after all, past its deadline; {} calls still run past theirs",
                        getMethodDescriptor().getFullMethodName(),
                        now);
            }
        }

        /** Counts the call as stuck once, if its service still runs it. */
        synchronized void countIfStillRunning() {
            if (running && !heldPastDeadline) {
                heldPastDeadline = true;
                int now = stuck.incrementAndGet();
                log.warn(
                        "{} has not finished within {}; {} calls run past their deadlines",
                        getMethodDescriptor().getFullMethodName(),
                        BlockingCalls.describe(Duration.ofNanos(System.nanoTime() - (answerBy - within.toNanos()))),
                        now);
            }
        }

        /** Answers the call unless a stream sent a message meanwhile; whether it is answered. */
        synchronized boolean expire() {
            if (closed) {
                return true;
            }
            if (System.nanoTime() - answerBy < 0) {
                return false; // a stream that sent a message just now
            }
            String method = getMethodDescriptor().getFullMethodName();
            countIfStillRunning();
            String why = whileItSends
                    ? ("%s sent nothing for %s: its reader takes no message, or what it waits on, most likely the "
                                    + "pool's filesystem, does not answer (see the pool's health); resume it from the "
                                    + "end of the last range it sent")
                            .formatted(method, BlockingCalls.describe(within))
                    : ("%s did not finish within %s, its deadline: what it waits on, most likely the pool's "
                                    + "filesystem, does not answer (see the pool's health); it goes on, and a retry "
                                    + "later finds what it did")
                            .formatted(method, BlockingCalls.describe(within));
            close(Status.fromCode(StatusInterceptor.RETRY_LATER).withDescription(why), new Metadata());
            return true;
        }
    }
}
