package dev.blockpool.common;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Hung calls are given up at their deadline, never pile up, and never stop the calls that do return. */
@Timeout(value = 60, unit = TimeUnit.SECONDS) // a guard against a hang, not a measure
class BlockingCallsTest {

    private static final Duration SHORT = Duration.ofMillis(100);
    private static final Duration LONG = Duration.ofHours(1);

    /** Stands in for a filesystem that does not answer until the test lets it. */
    private final CountDownLatch deadFilesystem = new CountDownLatch(1);

    private final List<Thread> callers = new ArrayList<>();

    @AfterEach
    void reviveTheFilesystem() throws InterruptedException {
        deadFilesystem.countDown();
        for (Thread caller : callers) {
            caller.join();
        }
    }

    private String hang() {
        try {
            deadFilesystem.await();
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
        return "late";
    }

    private static void assertUnavailable(Runnable call, String... messageParts) {
        assertThatThrownBy(call::run).isInstanceOfSatisfying(StorageException.class, e -> {
            assertThat(e.kind()).isEqualTo(StorageException.Kind.UNAVAILABLE);
            assertThat(e.getMessage()).contains(messageParts);
        });
    }

    @Test
    void aCallAnswersWithItsResultOrItsOwnFailure() {
        BlockingCalls calls = new BlockingCalls("test", 2);
        assertThat(calls.call(LONG, "statfs(2) of /a", () -> "done")).isEqualTo("done");
        assertThat(calls.call(
                        LONG, "statfs(2) of /a", () -> Thread.currentThread().isVirtual()))
                .isFalse();
        assertThatThrownBy(() -> calls.call(LONG, "mount(2) at /b", () -> {
                    throw StorageException.precondition("not a directory");
                }))
                .isInstanceOfSatisfying(
                        StorageException.class,
                        e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.PRECONDITION));
    }

    @Test
    void aCallOnAThreadThatMustNotWaitIsRefusedRatherThanLeftToWait() {
        BlockingCalls calls = new BlockingCalls("test", 2);
        AtomicReference<Throwable> refused = new AtomicReference<>();
        NoWaiting.run("the transport thread", () -> {
            try {
                calls.call(LONG, "statfs(2) of /pool", () -> "done");
            } catch (Throwable t) {
                refused.set(t);
            }
        });
        assertThat(refused.get())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("statfs(2) of /pool would wait on the transport thread");
        assertThat(calls.call(LONG, "statfs(2) of /pool", () -> "done")).isEqualTo("done"); // not marked: runs
    }

    @Test
    void aHungCallIsAnsweredAtItsDeadlineAndTheOthersGoOn() {
        BlockingCalls calls = new BlockingCalls("test", 2);
        assertUnavailable(
                () -> calls.call(SHORT, "statfs(2) of /pool/dead", this::hang),
                "statfs(2) of /pool/dead did not finish within " + BlockingCalls.describe(SHORT));
        assertThat(calls.stuck()).isEqualTo(1);
        // The other thread still serves, as often as asked.
        for (int i = 0; i < 5; i++) {
            assertThat(calls.call(LONG, "statfs(2) of /alive", () -> "fine")).isEqualTo("fine");
        }
    }

    @Test
    void onceEveryThreadIsStuckNewCallsFailAtOnceUntilOneReturns() throws InterruptedException {
        BlockingCalls calls = new BlockingCalls("test", 2);
        assertUnavailable(() -> calls.call(SHORT, "statfs(2) of /pool/a", this::hang), "did not finish");
        assertUnavailable(() -> calls.call(SHORT, "statfs(2) of /pool/b", this::hang), "did not finish");
        assertThat(calls.stuck()).isEqualTo(2);

        // A deadline of an hour: only an immediate refusal lets this test go on.
        assertUnavailable(
                () -> calls.call(LONG, "mount(2) at /target", () -> "never run"),
                "mount(2) at /target is refused",
                "all 2 threads",
                "stuck",
                "statfs(2) of /pool/b");

        deadFilesystem.countDown();
        while (calls.stuck() > 0) {
            Thread.sleep(10);
        }
        assertThat(calls.call(LONG, "mount(2) at /target", () -> "mounted")).isEqualTo("mounted");
    }

    @Test
    void callsBeyondTheThreadsWaitForOneThatReturns() throws InterruptedException {
        BlockingCalls calls = new BlockingCalls("test", 1);
        CountDownLatch slowStarted = new CountDownLatch(1);
        List<String> answers = new java.util.concurrent.CopyOnWriteArrayList<>();
        Thread slow = Thread.ofVirtual()
                .start(() -> answers.add(calls.call(LONG, "slow", () -> {
                    slowStarted.countDown();
                    return hang();
                })));
        callers.add(slow);
        slowStarted.await();
        Thread waiting = Thread.ofVirtual().start(() -> answers.add(calls.call(LONG, "next", () -> "next")));
        callers.add(waiting);
        deadFilesystem.countDown(); // the slow call returns within its deadline: the next one runs
        slow.join();
        waiting.join();
        assertThat(answers).containsExactlyInAnyOrder("late", "next");
        assertThat(calls.stuck()).isZero();
    }

    @Test
    void theThreadsABurstStartedEndAfterTheKeepAlive() throws InterruptedException {
        BlockingCalls calls = new BlockingCalls("test", 4, Duration.ofMillis(200));
        CountDownLatch allStarted = new CountDownLatch(4);
        for (int i = 0; i < 4; i++) {
            callers.add(Thread.ofVirtual()
                    .start(() -> calls.call(LONG, "statfs(2) of /a", () -> {
                        allStarted.countDown();
                        return hang();
                    })));
        }
        allStarted.await();
        assertThat(calls.threadCount()).isEqualTo(4);
        deadFilesystem.countDown();
        for (Thread caller : callers) {
            caller.join();
        }
        while (calls.threadCount() > 0) {
            Thread.sleep(10); // the class's timeout fails the test should they stay
        }
        assertThat(calls.call(LONG, "statfs(2) of /a", () -> "fine")).isEqualTo("fine");
    }
}
