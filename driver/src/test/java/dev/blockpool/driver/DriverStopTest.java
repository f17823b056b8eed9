package dev.blockpool.driver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.pool.AccessType;
import dev.blockpool.pool.Allocation;
import dev.blockpool.pool.Ids;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.VolumeSpecs;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Stop means stopped: a controller stopped at any point of its pool reconcile (before it starts,
 * at each of its steps, after its last) ends it there and waits for it; once stop returns,
 * nothing of the driver runs, writes in the pool or holds the controller's claim. The reconcile
 * says where it is through its steps, and the test stops the driver from there: no timing.
 */
class DriverStopTest {

    private static final Duration GRACE = Duration.ofSeconds(30);

    @TempDir
    Path dir;

    @Test
    void aDriverStoppedBeforeItsReconcileStartsNeverRunsIt() throws Exception {
        Path poolDir = leftovers("before");
        List<String> told = new CopyOnWriteArrayList<>();
        // a start delay far beyond the test: the stop comes first, whatever the machine's load
        Driver.Running running = start(poolDir, "before", Duration.ofDays(1), told::add);

        running.stop(GRACE);

        assertThat(running.backgroundEnded()).isTrue();
        assertThat(told).isEmpty();
        assertThat(orphans(poolDir)).hasSize(3);
        assertThat(poolDir.resolve("attachments/.complete")).doesNotExist();
        assertClaimLetGo(running, poolDir);
    }

    @Test
    void aDriverStoppedAtAnyStepOfItsReconcileEndsItThereAndWaitsForIt() throws Exception {
        List<String> steps = allSteps();
        assertThat(steps)
                .as("the steps of one reconcile")
                .contains("reindex attachments", "done")
                .anyMatch(step -> step.startsWith("remove volumes/"))
                .anyMatch(step -> step.startsWith("check snapshots/"));

        for (int at = 0; at < steps.size(); at++) {
            String name = "at-" + at;
            Path poolDir = leftovers(name);
            List<String> orphansBefore = orphans(poolDir);
            List<String> told = new CopyOnWriteArrayList<>();
            int stopAt = at;
            CountDownLatch stopping = new CountDownLatch(1);
            Driver.Running[] running = new Driver.Running[1];
            CountDownLatch started = new CountDownLatch(1);
            Thread[] stopper = new Thread[1];
            running[0] = start(poolDir, name, Duration.ZERO, step -> {
                told.add(step);
                if (told.size() - 1 == stopAt) {
                    awaitQuietly(started);
                    // stop from another thread, as SIGTERM does, and go on only once it has begun
                    stopper[0] = Thread.ofPlatform().start(() -> {
                        running[0].stop(GRACE);
                        stopping.countDown();
                    });
                    awaitStopRequested(running[0]);
                }
            });
            started.countDown();
            stopping.await();
            stopper[0].join();

            String where = "stopped at step " + at + " (" + steps.get(at) + ")";
            assertThat(running[0].backgroundEnded()).as(where).isTrue();
            assertThat(told).as(where).containsExactlyElementsOf(steps.subList(0, at + 1));
            // what the steps before the stop removed is gone, what the later ones would have removed stays
            List<String> removed = steps.subList(0, at).stream()
                    .filter(step -> step.startsWith("remove ") || step.startsWith("check "))
                    .map(step -> step.substring(step.indexOf(' ') + 1))
                    .filter(orphansBefore::contains)
                    .toList();
            List<String> stays = new ArrayList<>(orphansBefore);
            stays.removeAll(removed);
            assertThat(orphans(poolDir)).as(where).containsExactlyInAnyOrderElementsOf(stays);
            assertThat(poolDir.resolve("attachments/.complete"))
                    .as(where + ": the attachment index is repaired only by a reconcile that got there")
                    .matches(file -> Files.exists(file) == stopAt > steps.indexOf("reindex attachments"));
            assertClaimLetGo(running[0], poolDir);
        }
    }

    @Test
    void aClaimAskedForOnceTheStopHasBegunIsRefusedAndLeavesThePoolFree() throws Exception {
        Path poolDir = leftovers("late-claim");
        List<Optional<String>> lateClaims = new CopyOnWriteArrayList<>();
        List<Optional<String>> othersClaims = new CopyOnWriteArrayList<>();
        Driver.Running[] running = new Driver.Running[1];
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch stopped = new CountDownLatch(1);
        Thread[] stopper = new Thread[1];
        // The reconcile's first step holds the stop in its drain while, as a late call, a look of
        // Probe's or the reindex would, the driver asks for the controller's claim.
        running[0] = start(poolDir, "late-claim", Duration.ZERO, step -> {
            if (stopper[0] != null) {
                return;
            }
            awaitQuietly(started);
            stopper[0] = Thread.ofPlatform().start(() -> {
                running[0].stop(GRACE);
                stopped.countDown();
            });
            awaitStopRequested(running[0]);
            lateClaims.add(running[0].pool().controllerClaim().problem());
            Pool other = Pool.open(poolDir, new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO);
            othersClaims.add(other.controllerClaim().problem());
            other.controllerClaim().release();
        });
        started.countDown();
        stopped.await();

        assertThat(lateClaims)
                .singleElement()
                .satisfies(problem -> assertThat(problem)
                        .hasValueSatisfying(why -> assertThat(why).contains("stopping")));
        assertThat(othersClaims)
                .as("another controller takes the pool while this one still stops")
                .containsExactly(Optional.empty());
        assertThat(running[0].backgroundEnded()).isTrue();
        assertClaimLetGo(running[0], poolDir);
    }

    /** The steps of one whole reconcile of {@link #leftovers}, in order. */
    private List<String> allSteps() throws Exception {
        Path poolDir = leftovers("all");
        List<String> told = new CopyOnWriteArrayList<>();
        CountDownLatch done = new CountDownLatch(1);
        Driver.Running running = start(poolDir, "all", Duration.ZERO, step -> {
            told.add(step);
            if (step.equals("done")) {
                done.countDown();
            }
        });
        done.await();
        running.stop(GRACE);
        assertThat(orphans(poolDir))
                .as("a whole reconcile removes every leftover")
                .isEmpty();
        return List.copyOf(told);
    }

    /** After a stop nobody holds the controller's claim, and the stopped driver never takes it again. */
    private static void assertClaimLetGo(Driver.Running running, Path poolDir) {
        assertThat(running.pool().controllerClaim().problem())
                .as("the stopped driver's claim")
                .hasValueSatisfying(problem -> assertThat(problem).contains("stopping"));
        Pool other = Pool.open(poolDir, new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO);
        try {
            assertThat(other.controllerClaim().problem())
                    .as("another controller takes the pool")
                    .isEmpty();
        } finally {
            other.controllerClaim().release();
        }
    }

    private Driver.Running start(Path poolDir, String name, Duration delay, dev.blockpool.pool.ReconcileSteps steps)
            throws Exception {
        return DriverStartTest.controller(dir.resolve(name + ".sock"), poolDir, delay, steps);
    }

    /** A pool with what crashes leave (a temporary file, two images without a record) beside a committed volume. */
    private Path leftovers(String name) throws Exception {
        Path poolDir = dir.resolve(name);
        Pool pool = Pool.open(poolDir, new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO);
        pool.volumes().create(VolumeSpecs.of("kept", 4096, Allocation.SPARSE, AccessType.BLOCK));
        Files.write(poolDir.resolve("volumes").resolve(Ids.volumeIdFor("interrupted") + ".img"), new byte[4096]);
        Files.write(poolDir.resolve("volumes").resolve(Ids.volumeIdFor("kept") + ".json.1-1.tmp"), new byte[1]);
        Files.write(poolDir.resolve("snapshots").resolve(Ids.snapshotIdFor("interrupted") + ".img"), new byte[4096]);
        for (String kind : List.of("volumes", "snapshots")) {
            try (Stream<Path> files = Files.list(poolDir.resolve(kind))) {
                for (Path file : files.toList()) {
                    // older than the driver's settle time, as a crash before a restart leaves them
                    Files.setLastModifiedTime(file, FileTime.from(Instant.now().minus(Duration.ofHours(1))));
                }
            }
        }
        assertThat(orphans(poolDir)).hasSize(3);
        return poolDir;
    }

    /** The leftovers still in the pool, as "volumes/NAME" and "snapshots/NAME". */
    private static List<String> orphans(Path poolDir) throws Exception {
        List<String> found = new ArrayList<>();
        for (String kind : List.of("volumes", "snapshots")) {
            try (Stream<Path> files = Files.list(poolDir.resolve(kind))) {
                files.map(file -> file.getFileName().toString())
                        .filter(file -> file.endsWith(".tmp")
                                || (file.endsWith(".img")
                                        && !Files.exists(poolDir.resolve(kind).resolve(file.replace(".img", ".json")))))
                        .forEach(file -> found.add(kind + "/" + file));
            }
        }
        return found;
    }

    private static void awaitStopRequested(Driver.Running running) {
        try {
            running.background().awaitStopRequested();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
