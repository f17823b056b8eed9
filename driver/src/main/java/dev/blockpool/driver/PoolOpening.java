package dev.blockpool.driver;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.StorageException;
import dev.blockpool.csi.StatusInterceptor;
import dev.blockpool.identity.Readiness;
import dev.blockpool.pool.MemberFreeze;
import dev.blockpool.pool.NodeClaim;
import dev.blockpool.pool.Pool;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The part of the driver's start that needs its pool, on a thread of its own: a pool that does
 * not answer (a dead NFS or GlusterFS server, a FUSE daemon gone) holds that thread in the
 * kernel, not the start, so the driver serves all the same and kubelet's registrar and
 * livenessprobe find a socket that answers. Until the pool's services are served, Probe answers
 * not ready and every call but Identity's {@code UNAVAILABLE}, both naming the pool and since
 * when; once the pool answers, the start goes on from there, without a restart. A step that fails
 * (the waiting system call ended by an error, as a FUSE mount whose daemon is gone ends it, or a
 * pool directory not yet mounted) is tried again, from the first step, after a pause that grows:
 * each is idempotent. A failure is never the end of the start, and never leaves it half open:
 * what a failed try took is let go, and Probe says why the pool is not open yet.
 *
 * <p>A stop lets no further step begin: a step under way when it came (a system call waiting on
 * the pool) ends where it is once the pool answers, and what the opening took is let go.
 */
final class PoolOpening implements Readiness {

    private static final Logger log = LoggerFactory.getLogger(PoolOpening.class);
    /** How long the opening waits after a failure before it tries again; twice as long each time, up to the last. */
    private static final Duration FIRST_PAUSE = Duration.ofSeconds(1);

    private static final Duration LAST_PAUSE = Duration.ofMinutes(1);

    /** What the opening gives: the open pool, what it took in it, and how ready it is from then on. */
    record Opened(Pool pool, MemberFreeze freeze, Optional<NodeClaim> nodeClaim, Readiness readiness) {

        /**
         * The driver has begun to stop: no claim on the pool is taken from now on, by a late call,
         * Probe or the background work; those held stay until {@link #release}.
         */
        void stopClaiming() {
            pool.controllerClaim().stopTaking();
            nodeClaim.ifPresent(NodeClaim::stopTaking);
        }

        /** Lets the pool's claims go for good: nothing of this driver takes them again. */
        void release() {
            pool.controllerClaim().close();
            nodeClaim.ifPresent(NodeClaim::close);
        }
    }

    /** The steps that open the pool, telling {@code beforeEachStep} before each, which may end them there. */
    @FunctionalInterface
    interface Steps {
        Opened open(Runnable beforeEachStep);
    }

    private final Path pool;
    private final Instant since;
    /** Counted down once the first try has ended, opened or failed. */
    private final CountDownLatch firstTry = new CountDownLatch(1);

    private final Thread thread;

    // guarded by this
    private Opened opened;
    /** Why the last try failed; null while none has. */
    private Throwable failure;

    private Consumer<Opened> whenOpen;
    private boolean stopping;
    private boolean served;

    private PoolOpening(Path pool, Steps steps) {
        this.pool = pool;
        this.since = Instant.now();
        this.thread = Thread.ofPlatform().name("pool-open").daemon().unstarted(() -> run(steps));
    }

    /** Starts opening the pool at {@code pool} with {@code steps}. */
    static PoolOpening start(Path pool, Steps steps) {
        PoolOpening opening = new PoolOpening(pool, steps);
        opening.thread.start();
        return opening;
    }

    /**
     * The pool once it has opened within {@code wait}, else empty: while it does not answer, and
     * at once when its first try failed (it is tried again; {@link #problems} says why).
     */
    Optional<Opened> awaitWithin(Duration wait) {
        try {
            firstTry.await(wait.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        synchronized (this) {
            return Optional.ofNullable(opened);
        }
    }

    /**
     * Runs {@code serve} once the pool has opened: now when it has, else on the opening's thread
     * once it does; never once {@link #stop} has been called. It makes no system call on the pool.
     */
    synchronized void whenOpen(Consumer<Opened> serve) {
        if (opened != null) {
            serve.accept(opened);
        } else {
            whenOpen = serve;
        }
    }

    /** The pool's services are served from now on: Probe answers as they are ready. */
    synchronized void serving() {
        served = true;
    }

    /** The pool, once its services are served. */
    synchronized Optional<Opened> served() {
        return served ? Optional.of(opened) : Optional.empty();
    }

    /**
     * Lets no step begin from now on, nor what {@link #whenOpen} was given. The pool, when its
     * services have been served: the caller stops them and lets it go; else the opening does.
     */
    synchronized Optional<Opened> stop() {
        stopping = true;
        notifyAll(); // a pause before the next try ends
        if (opened != null && !served) {
            opened.release();
        }
        return served();
    }

    /** Whether the opening's thread has ended (it may wait in the kernel on a pool that does not answer). */
    boolean ended() {
        return !thread.isAlive();
    }

    /** For tests: returns once the opening's thread has ended. */
    void awaitEnded() throws InterruptedException {
        thread.join();
    }

    @Override
    public List<String> problems() {
        Readiness readiness;
        synchronized (this) {
            if (!served) {
                return List.of(whyNotServed());
            }
            readiness = opened.readiness();
        }
        return readiness.problems();
    }

    /**
     * The services of {@code descriptors}, each method answering {@code UNAVAILABLE} with why,
     * until the pool's own replace them: kubelet and the sidecars retry that code.
     */
    List<ServerServiceDefinition> standIns(List<ServiceDescriptor> descriptors) {
        return descriptors.stream().map(this::standIn).toList();
    }

    private ServerServiceDefinition standIn(ServiceDescriptor descriptor) {
        ServerServiceDefinition.Builder service = ServerServiceDefinition.builder(descriptor);
        descriptor.getMethods().forEach(method -> service.addMethod(unavailable(method)));
        return service.build();
    }

    private <Q, R> ServerMethodDefinition<Q, R> unavailable(MethodDescriptor<Q, R> method) {
        return ServerMethodDefinition.create(method, (call, headers) -> {
            String why;
            synchronized (this) {
                why = whyNotServed();
            }
            call.close(
                    Status.fromCode(StatusInterceptor.RETRY_LATER)
                            .withDescription(method.getFullMethodName() + " is not served yet: " + why),
                    new Metadata());
            return new ServerCall.Listener<>() {};
        });
    }

    private String whyNotServed() {
        if (opened != null) {
            return "the pool " + pool + " has just opened; its services are served in a moment";
        }
        if (failure != null) {
            return "the pool " + pool + " does not open (since " + since + ", when the driver started): "
                    + reason(failure) + "; the driver tries again until it does";
        }
        return "the pool " + pool + " does not answer (since " + since + ", when the driver started): its "
                + "filesystem's server (NFS, GlusterFS, a FUSE daemon) or its mount is to be looked at; the "
                + "driver goes on starting once it answers";
    }

    private void run(Steps steps) {
        Duration pause = FIRST_PAUSE;
        while (true) {
            try {
                tryOnce(steps);
                return;
            } catch (CancellationException e) {
                log.info("the pool {} answered after the driver stopped: its start goes no further", pool);
                return;
            } catch (RuntimeException | LinkageError e) {
                // LinkageError: a binding of the C library that failed; anything else is the JVM's end
                synchronized (this) {
                    failure = e;
                    if (stopping) {
                        return;
                    }
                }
                logFailure(e, pause);
            } finally {
                firstTry.countDown();
            }
            if (!pauseUnlessStopping(pause)) {
                return;
            }
            pause = pause.multipliedBy(2).compareTo(LAST_PAUSE) < 0 ? pause.multipliedBy(2) : LAST_PAUSE;
        }
    }

    /**
     * One try: the steps, then what {@link #whenOpen} was given. A try that fails once the steps
     * have taken their claims lets them go, so that the next try finds them free.
     */
    private void tryOnce(Steps steps) {
        Opened open = steps.open(this::beforeStep);
        synchronized (this) {
            if (stopping) {
                open.release();
                throw new CancellationException("the driver stopped");
            }
            try {
                opened = open;
                if (whenOpen != null) {
                    whenOpen.accept(open);
                }
                failure = null;
            } catch (RuntimeException | LinkageError e) {
                opened = null;
                served = false;
                open.release();
                throw e;
            }
        }
    }

    private void logFailure(Throwable e, Duration pause) {
        String again = BlockingCalls.describe(pause);
        if (e instanceof StorageException || e instanceof IllegalArgumentException) {
            log.warn("cannot open the pool {}: {}; trying again in {}", pool, e.getMessage(), again);
        } else {
            log.warn("cannot open the pool {}; trying again in {}", pool, again, e);
        }
    }

    /** What a failure says to a person: its message, never a Java class name. */
    private static String reason(Throwable failure) {
        return failure.getMessage() != null && !(failure instanceof LinkageError)
                ? failure.getMessage()
                : "an unexpected error in the driver; its log has the details";
    }

    /** Waits {@code pause}, or less when the driver stops; false when it stops. */
    private synchronized boolean pauseUnlessStopping(Duration pause) {
        long until = System.nanoTime() + pause.toNanos();
        try {
            for (long left = pause.toNanos(); !stopping && left > 0; left = until - System.nanoTime()) {
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
        } catch (InterruptedException e) {
            return false;
        }
        return !stopping;
    }

    private synchronized void beforeStep() {
        if (stopping) {
            throw new CancellationException("the driver is stopping");
        }
    }
}
