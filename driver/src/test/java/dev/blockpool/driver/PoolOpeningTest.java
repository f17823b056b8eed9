package dev.blockpool.driver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.pool.MemberFreeze;
import dev.blockpool.pool.NodeClaim;
import dev.blockpool.pool.Pool;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The part of the start that needs the pool: its steps wait on latches where a pool that does not
 * answer would hold them in the kernel, and the test says when the pool answers. No timing: the
 * start is told to wait not at all, or as long as it takes.
 */
class PoolOpeningTest {

    private static final Duration NOT_AT_ALL = Duration.ZERO;
    private static final Duration AS_LONG_AS_IT_TAKES = Duration.ofDays(1);

    @TempDir
    Path dir;

    private final CountDownLatch poolAnswers = new CountDownLatch(1);
    private final List<String> steps = new CopyOnWriteArrayList<>();

    @Test
    void aPoolThatAnswersOpensWithinTheStartsWaitAndIsReadyOnceServed() {
        poolAnswers.countDown();
        PoolOpening opening = PoolOpening.start(dir, this::open);

        Optional<PoolOpening.Opened> opened = opening.awaitWithin(AS_LONG_AS_IT_TAKES);

        assertThat(opened).isPresent();
        assertThat(opening.problems()).as("before its services are served").isNotEmpty();
        opening.serving();
        assertThat(opening.problems()).isEmpty();
        assertThat(steps).containsExactly("look", "write");
    }

    @Test
    void aPoolThatDoesNotAnswerIsNamedUntilItAnswersThenServed() throws Exception {
        PoolOpening opening = PoolOpening.start(dir, this::open);
        assertThat(opening.awaitWithin(NOT_AT_ALL)).isEmpty();
        assertThat(opening.problems())
                .singleElement()
                .asString()
                .startsWith("the pool " + dir + " does not answer (since ");

        CountDownLatch served = servedOnceOpen(opening);
        poolAnswers.countDown();
        served.await();

        assertThat(opening.problems()).isEmpty();
        assertThat(steps).containsExactly("look", "write");
        assertThat(opening.stop()).as("served: the stop's to let go").isPresent();
    }

    @Test
    void aStopWhileAStepWaitsOnThePoolLetsNoFurtherStepBeginNorServe() throws Exception {
        PoolOpening opening = PoolOpening.start(dir, this::open);
        assertThat(opening.awaitWithin(NOT_AT_ALL)).isEmpty();
        opening.whenOpen(_ -> steps.add("served"));

        assertThat(opening.stop()).isEmpty();
        poolAnswers.countDown(); // the step under way returns
        opening.awaitEnded();

        assertThat(steps).as("no step after the one under way").containsExactly("look");
    }

    @Test
    void aFailureWhileTheStartWaitsIsTriedAgainAndProbeSaysWhy() throws Exception {
        AtomicInteger tries = new AtomicInteger();
        PoolOpening opening = PoolOpening.start(dir, beforeEachStep -> {
            if (tries.incrementAndGet() == 1) {
                throw new IllegalArgumentException(
                        "cannot create pool directory " + dir + ": Transport endpoint is not connected");
            }
            return open(beforeEachStep); // waits until the pool answers
        });

        assertThat(opening.awaitWithin(AS_LONG_AS_IT_TAKES))
                .as("the start serves without the pool rather than end")
                .isEmpty();
        assertThat(opening.problems())
                .singleElement()
                .asString()
                .startsWith("the pool " + dir + " does not open (since ")
                .contains("Transport endpoint is not connected")
                .endsWith("the driver tries again until it does");

        CountDownLatch served = servedOnceOpen(opening);
        poolAnswers.countDown();
        served.await();

        assertThat(tries).hasValue(2);
        assertThat(opening.problems()).isEmpty();
        opening.stop();
    }

    @Test
    void aTryThatFailsOnceItHoldsTheNodesClaimLetsItGoAndTheNextOneIsReady() throws Exception {
        AtomicInteger serves = new AtomicInteger();
        CountDownLatch served = new CountDownLatch(1);
        PoolOpening opening = PoolOpening.start(dir, this::openClaimingTheNode);
        assertThat(opening.awaitWithin(NOT_AT_ALL)).isEmpty();
        opening.whenOpen(_ -> {
            opening.serving();
            if (serves.incrementAndGet() == 1) {
                throw new IllegalStateException("cannot serve the pool's services");
            }
            served.countDown();
        });

        poolAnswers.countDown();
        served.await();

        assertThat(serves).hasValue(2);
        assertThat(opening.problems())
                .as("the node ID is this try's, not the failed one's")
                .isEmpty();
        opening.stop().ifPresent(PoolOpening.Opened::release);
    }

    @Test
    void aFailureOnceTheStartStoppedWaitingIsTriedAgainFromTheFirstStep() throws Exception {
        AtomicInteger tries = new AtomicInteger();
        CountDownLatch failed = new CountDownLatch(1);
        PoolOpening opening = PoolOpening.start(dir, beforeEachStep -> {
            if (tries.incrementAndGet() == 1) {
                await(poolAnswers);
                failed.countDown();
                throw new IllegalStateException("Transport endpoint is not connected");
            }
            return open(beforeEachStep);
        });
        assertThat(opening.awaitWithin(NOT_AT_ALL)).isEmpty();
        CountDownLatch served = servedOnceOpen(opening);

        poolAnswers.countDown();
        failed.await();
        served.await();

        assertThat(tries).hasValue(2);
        assertThat(opening.problems()).isEmpty();
        opening.stop();
    }

    /** Serves the pool once it has opened, as the driver does; the latch says when. */
    private static CountDownLatch servedOnceOpen(PoolOpening opening) {
        CountDownLatch served = new CountDownLatch(1);
        opening.whenOpen(_ -> {
            opening.serving();
            served.countDown();
        });
        return served;
    }

    /** A look that waits until the pool answers, then a step that writes. */
    private PoolOpening.Opened open(Runnable beforeEachStep) {
        steps.add("look");
        await(poolAnswers);
        beforeEachStep.run();
        steps.add("write");
        Pool pool = Pool.open(dir.resolve("pool"), new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO);
        return new PoolOpening.Opened(pool, MemberFreeze.NONE, Optional.empty(), List::of);
    }

    /** {@link #open}, taking the node's claim as the node's start does; ready while this try holds it. */
    private PoolOpening.Opened openClaimingTheNode(Runnable beforeEachStep) {
        PoolOpening.Opened open = open(beforeEachStep);
        NodeClaim claim = open.pool().nodeClaim("node-1");
        claim.problem(); // takes the ID when it is free
        return new PoolOpening.Opened(
                open.pool(),
                MemberFreeze.NONE,
                Optional.of(claim),
                () -> claim.problem().map(List::of).orElse(List.of()));
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
