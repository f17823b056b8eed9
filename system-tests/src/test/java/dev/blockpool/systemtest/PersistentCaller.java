package dev.blockpool.systemtest;

import com.google.protobuf.Message;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;

/**
 * Sends a call as the sidecars and kubelet do: when the driver dies under it or answers with a
 * transient error (UNAVAILABLE, ABORTED, DEADLINE_EXCEEDED), it has the driver restarted when
 * dead and sends the same request again, until a definite answer: success or any other code.
 *
 * <p>A call chosen to be killed is sent, and after a random delay of up to a little more than
 * the call's typical duration (measured on the calls that were not killed; apart for the
 * first call of its type after a restart, which meets a cold JVM and takes far longer) the driver is
 * SIGKILLed: the kill falls anywhere inside the call, between its steps, or just after its
 * answer. A retry after a kill may be killed again.
 */
final class PersistentCaller implements AutoCloseable {

    static final Set<Status.Code> TRANSIENT =
            EnumSet.of(Status.Code.UNAVAILABLE, Status.Code.ABORTED, Status.Code.DEADLINE_EXCEEDED);
    private static final int MAX_KILLS_PER_CALL = 3;
    private static final double KILL_RETRY_CHANCE = 0.2;
    /** How far past the typical duration a kill may fall: some kills land after the answer. */
    private static final double KILL_WINDOW = 1.15;

    private static final Duration GIVE_UP_AFTER = Duration.ofMinutes(2);
    private static final Duration TRANSIENT_BACKOFF = Duration.ofMillis(100);
    /**
     * Once the driver is killed and the client closed, every call still in flight fails at once; far longer is a hang.
     */
    private static final Duration UNANSWERED_AFTER_KILL = Duration.ofSeconds(10);

    /** A kill: when it fell relative to the call, and what the host showed right after it. */
    record Kill(String when, HostInspector.KillPoint point) {
        @Override
        public String toString() {
            return when + "; found " + point.detail();
        }
    }

    /**
     * The definite answer, a response or an error; neither when none came before giving up, and
     * then {@code lastTransient} is the last transient error.
     */
    record Answer(
            Optional<Message> response,
            Optional<StatusRuntimeException> error,
            int attempts,
            List<Kill> kills,
            List<String> unexpectedExits,
            Optional<StatusRuntimeException> lastTransient) {}

    private record Attempt(Optional<Message> response, Optional<StatusRuntimeException> error, boolean definite) {
        static Attempt lost(Optional<StatusRuntimeException> error) {
            return new Attempt(Optional.empty(), error, false);
        }
    }

    private final CrashableDriver driver;
    private final Function<Operation, HostInspector.KillPoint> killPoints;
    private final Map<String, Double> typicalNanos = new HashMap<>();
    /** The driver start at which each type of call was last sent: the first after a start is a cold one. */
    private final Map<String, Integer> lastSentAtStart = new HashMap<>();

    private ExecutorService inFlight = newInFlightExecutor();

    PersistentCaller(CrashableDriver driver, Function<Operation, HostInspector.KillPoint> killPoints) {
        this.driver = driver;
        this.killPoints = killPoints;
    }

    /**
     * Sends the call until a definite answer, killing the driver on the first attempt when
     * {@code kill}; {@code killRandom} (the call's own, so that how many attempts one call takes
     * changes nothing for the next) draws the delays and whether a retry is killed too.
     */
    Answer call(Operation.Call call, boolean kill, Random killRandom) throws IOException, InterruptedException {
        List<Kill> kills = new ArrayList<>();
        List<String> exits = new ArrayList<>();
        long giveUp = System.nanoTime() + GIVE_UP_AFTER.toNanos();
        Optional<StatusRuntimeException> last = Optional.empty();
        int attempt = 0;
        while (System.nanoTime() < giveUp) {
            attempt++;
            driver.ensureRunning().ifPresent(exits::add);
            boolean killThis = attempt == 1
                    ? kill
                    : !kills.isEmpty()
                            && kills.size() < MAX_KILLS_PER_CALL
                            && killRandom.nextDouble() < KILL_RETRY_CHANCE;
            Attempt result = killThis ? sendAndKill(call, kills, killRandom) : send(call);
            if (result.definite()) {
                return new Answer(result.response(), result.error(), attempt, kills, exits, Optional.empty());
            }
            if (result.error().isPresent()) {
                last = result.error();
            }
            if (!killThis) {
                Thread.sleep(TRANSIENT_BACKOFF);
            }
        }
        return new Answer(Optional.empty(), Optional.empty(), attempt, kills, exits, last);
    }

    private Attempt send(Operation.Call call) {
        long begin = System.nanoTime();
        try {
            Message response = call.send().apply(driver.process());
            learn(timing(call), System.nanoTime() - begin);
            return new Attempt(Optional.of(response), Optional.empty(), true);
        } catch (StatusRuntimeException e) {
            return TRANSIENT.contains(e.getStatus().getCode())
                    ? Attempt.lost(Optional.of(e))
                    : new Attempt(Optional.empty(), Optional.of(e), true);
        }
    }

    private Attempt sendAndKill(Operation.Call call, List<Kill> kills, Random killRandom)
            throws IOException, InterruptedException {
        String timing = timing(call);
        double typical = typicalNanos(timing);
        long delay = (long) (killRandom.nextDouble() * KILL_WINDOW * typical);
        Future<Message> sent = inFlight.submit(() -> call.send().apply(driver.process()));
        LockSupport.parkNanos(delay);
        boolean answered = sent.isDone();
        driver.crash();
        kills.add(new Kill(
                "%.1f ms after sending (typically %.1f ms%s), %s"
                        .formatted(
                                delay / 1e6,
                                typical / 1e6,
                                timing.substring(call.type().length()),
                                answered ? "after the answer had come" : "while the call was in flight"),
                killPoints.apply(call)));
        try {
            return new Attempt(
                    Optional.of(sent.get(UNANSWERED_AFTER_KILL.toMillis(), TimeUnit.MILLISECONDS)),
                    Optional.empty(),
                    true);
        } catch (TimeoutException e) {
            // A call that started just as the kill closed the client can wait forever: its deadline
            // timer would have run on the client's event loop, which is gone. It never reached the
            // driver (also gone): no answer. Its thread is interrupted, and replaced if it stays stuck.
            sent.cancel(true);
            inFlight.shutdownNow();
            inFlight = newInFlightExecutor();
            return Attempt.lost(Optional.empty());
        } catch (ExecutionException e) {
            if (!answered) {
                // Whatever failed after the kill is the connection dying, or (when the kill came before the
                // request left) the client being closed under it: no answer.
                return Attempt.lost(Optional.of(e.getCause())
                        .filter(StatusRuntimeException.class::isInstance)
                        .map(StatusRuntimeException.class::cast));
            }
            if (!(e.getCause() instanceof StatusRuntimeException error)) {
                throw new IllegalStateException("sending " + call.description() + " failed", e.getCause());
            }
            // An answer that came before the kill counts.
            return TRANSIENT.contains(error.getStatus().getCode())
                    ? Attempt.lost(Optional.of(error))
                    : new Attempt(Optional.empty(), Optional.of(error), true);
        }
    }

    /** What the call's duration is kept by: its type, and whether it is the first of its type since the start. */
    private String timing(Operation.Call call) {
        Integer sentAt = lastSentAtStart.put(call.type(), driver.starts());
        return call.type() + (sentAt == null || sentAt != driver.starts() ? " on a cold driver" : "");
    }

    /** The typical duration: a moving average over the calls that were not killed. */
    private double typicalNanos(String timing) {
        return typicalNanos.getOrDefault(timing, 30e6);
    }

    private void learn(String timing, long nanos) {
        typicalNanos.merge(timing, (double) nanos, (old, now) -> 0.8 * old + 0.2 * now);
    }

    private static ExecutorService newInFlightExecutor() {
        return Executors.newSingleThreadExecutor(
                Thread.ofPlatform().name("call-in-flight").daemon().factory());
    }

    @Override
    public void close() {
        inFlight.shutdownNow();
    }
}
