package dev.blockpool.systemtest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.HostRequirements;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.systemtest.CallerModel.Snapshot;
import dev.blockpool.systemtest.CallerModel.Volume;
import dev.blockpool.systemtest.Invariants.Problem;
import dev.blockpool.systemtest.PersistentCaller.Answer;
import dev.blockpool.systemtest.PersistentCaller.Kill;
import io.grpc.Status;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The packaged driver is SIGKILLed at random points of a random run of CSI calls, also inside
 * its multi-step calls (between an image copy and its record, between losetup, mkfs and
 * mount), while a caller that behaves like the sidecars and kubelet restarts it and retries
 * each call until it gets a definite answer. After every step, the driver's answers, the pool's
 * files, the mounts and the loop devices must match what the caller believes; data a pod
 * fsync'd must read back identical; and after a teardown through the driver nothing may be
 * left: no mount, no loop device, no file in the pool.
 *
 * <p>{@code -Dcrash.operations=N} (default 500) runs longer; {@code -Dcrash.seed=S} replays the
 * same sequence of operations and kill decisions (where a kill falls within a call depends on
 * timing). The seed is printed and is in every failure message. Each run appends one line to
 * {@code target/system-tests-summary.txt}; the steps are in {@code target/crash-operations.log}
 * and the driver's log in {@code target/crash-driver.log}.
 */
@NeedsRoot
class CrashRealHostTest {

    private static final int DEFAULT_OPERATIONS = 500;
    /**
     * A kill costs 2-3 s (the driver's JVM restarts, and the first calls meet a cold JVM), so
     * kills go where they find the most: one in six calls with several steps on disk (image
     * and record; losetup, mkfs and mount; unmount and detach), one in twenty of the others,
     * and a retry after a kill may be killed again. That is a kill every 8 to 11 steps, and
     * keeps the default run within about 3 minutes.
     */
    private static final Set<String> MULTI_STEP = Set.of(
            "CreateVolume",
            "CreateSnapshot",
            "DeleteVolume",
            "ControllerExpandVolume",
            "NodeStageVolume",
            "NodeUnstageVolume");

    private static final double KILL_RATE_MULTI_STEP = 0.17;
    private static final double KILL_RATE = 0.05;
    /** A kill right after a pod wrote and fsync'd data, with no call in flight. */
    private static final double KILL_RATE_AFTER_POD_ACTION = 0.05;
    /** The driver's reconcile settle time (Driver.RECONCILE_SETTLE_TIME, no flag to change it). */
    private static final Duration SETTLE_TIME = Duration.ofMinutes(10);
    /** The line the driver logs at info once a reconcile has run to its end (BackgroundWork.RECONCILE_DONE). */
    private static final String RECONCILE_DONE = "pool reconcile done";
    /** A bound for a reconcile that never ends, far above its 5 s delay and its run on a pool this small. */
    private static final Duration RECONCILE_LIMIT = Duration.ofMinutes(1);

    private static final Path TARGET = Path.of("target");

    private Path dir;
    private HostInspector host;
    private CrashableDriver driver;
    private PersistentCaller caller;
    private PrintWriter operationsLog;

    private CallerModel model;
    private OperationGenerator generator;
    private Invariants invariants;
    private long seed;
    /** Which steps are killed, and the seed of each call's own delays: the same for the same seed. */
    private Random killRandom;

    private int step;
    private final Map<String, String> violations = new LinkedHashMap<>();
    private final Map<String, Integer> killPoints = new TreeMap<>();

    @BeforeEach
    void setUp() throws IOException {
        HostRequirements.assumeRootWithLoopDevices();
        for (String tool :
                List.of("losetup", "blkid", "mkfs.ext4", "e2fsck", "resize2fs", "cp", "fallocate", "kill", "umount")) {
            HostRequirements.assumeCommand(tool);
        }
        dir = Files.createTempDirectory("blockpool-crash-");
        // At info: the test waits for the line the driver logs when its reconcile is done.
        DriverProcess process = new DriverProcess(dir, dir.resolve("pool"), "all", "system-test-node", "info");
        host = new HostInspector(dir, process.pool());
        driver = new CrashableDriver(process);
        Files.createDirectories(TARGET);
        operationsLog = new PrintWriter(Files.newBufferedWriter(TARGET.resolve("crash-operations.log")), true);
    }

    @AfterEach
    void tearDown() throws Exception {
        if (caller != null) {
            caller.close();
        }
        if (driver != null) {
            driver.crash();
        }
        if (operationsLog != null) {
            operationsLog.close();
        }
        if (dir != null) {
            Path log = dir.resolve("driver.log");
            if (Files.exists(log)) {
                Files.copy(log, TARGET.resolve("crash-driver.log"), StandardCopyOption.REPLACE_EXISTING);
            }
            List<String> cleaned = host.cleanUp();
            if (!cleaned.isEmpty()) {
                System.out.println("crash: cleaned up after the run:\n  " + String.join("\n  ", cleaned));
            }
        }
    }

    @Test
    void sigkillAtRandomPointsLosesNothingAndLeaksNothing() throws Exception {
        seed = Long.getLong("crash.seed", new SecureRandom().nextLong());
        int operations = Integer.getInteger("crash.operations", DEFAULT_OPERATIONS);
        System.out.printf("crash: seed %d, %d operations (replay with -Dcrash.seed=%d)%n", seed, operations, seed);
        Random seeds = new Random(seed);
        Random operationRandom = new Random(seeds.nextLong());
        killRandom = new Random(seeds.nextLong());
        model = new CallerModel(dir);
        boolean growsExt4 = HostRequirements.hasCapability(HostRequirements.CAP_SYS_RESOURCE);
        if (!growsExt4) {
            System.out.println("crash: no CAP_SYS_RESOURCE here, which online resize2fs needs (as does the driver, "
                    + "which inherits this test's capabilities): NodeExpandVolume is sent for block volumes only");
        }
        generator = new OperationGenerator(model, operationRandom, host, growsExt4);
        invariants = new Invariants(model, host);
        caller = new PersistentCaller(driver, this::killPoint);

        long begin = System.nanoTime();
        int done = 0;
        try {
            driver.ensureRunning();
            for (; done < operations; done++) {
                Operation operation = generator.next();
                double rate = operation instanceof Operation.PodAction
                        ? KILL_RATE_AFTER_POD_ACTION
                        : MULTI_STEP.contains(operation.type()) ? KILL_RATE_MULTI_STEP : KILL_RATE;
                perform(operation, killRandom.nextDouble() < rate);
            }
            afterTheSettleTime();
            readBackEveryVolume();
            tearDownThroughTheDriver();
            requireNothingLeft();
            driver.close();
        } catch (Exception e) {
            // E.g. a driver that no longer starts after a kill: a violation too, and where it happened matters.
            e.printStackTrace(System.out);
            violation(
                    "aborted", "", "#" + step + ", where the run stopped", List.of(), "the run could not go on: " + e);
        } finally {
            long seconds = Duration.ofNanos(System.nanoTime() - begin).toSeconds();
            report(done, seconds);
        }
        assertThat(violations.values())
                .withFailMessage(() -> "%d violation(s) with seed %d (replay with -Dcrash.seed=%d):%n  %s"
                        .formatted(violations.size(), seed, seed, String.join("\n  ", violations.values())))
                .isEmpty();
    }

    /** Performs one step until its definite answer, killing the driver as decided, then checks everything. */
    private void perform(Operation operation, boolean kill) throws Exception {
        step++;
        long begin = System.nanoTime();
        List<Kill> kills = List.of();
        String outcome;
        String context = "#" + step + " " + operation.description();
        switch (operation) {
            case Operation.Call call -> {
                Answer answer = caller.call(call, kill, new Random(killRandom.nextLong()));
                kills = answer.kills();
                for (String exit : answer.unexpectedExits()) {
                    violation("exit:" + step, "", context, kills, exit);
                }
                if (answer.response().isPresent()) {
                    outcome = "ok";
                    Optional<String> wrong =
                            call.onSuccess().apply(answer.response().get());
                    if (wrong.isPresent()) {
                        violation(
                                "answer:" + call.type() + ":" + call.subjectId(),
                                call.subjectId(),
                                context,
                                kills,
                                wrong.get());
                    }
                } else if (answer.error().isPresent()) {
                    Status status = answer.error().get().getStatus();
                    outcome = status.getCode().name();
                    violation(
                            "answer:" + call.type() + ":" + call.subjectId(),
                            call.subjectId(),
                            context,
                            kills,
                            "a valid request got the definite answer %s: %s (attempt %d)"
                                    .formatted(status.getCode(), status.getDescription(), answer.attempts()));
                } else {
                    outcome = "no answer";
                    violation(
                            "answer:" + call.type() + ":" + call.subjectId(),
                            call.subjectId(),
                            context,
                            kills,
                            "no definite answer within 2 minutes (%d attempts, last %s)"
                                    .formatted(
                                            answer.attempts(),
                                            answer.lastTransient()
                                                    .map(e -> e.getStatus().toString())
                                                    .orElse("-")));
                }
            }
            case Operation.PodAction action -> {
                Optional<String> wrong;
                try {
                    wrong = action.run().call();
                } catch (IOException e) {
                    wrong = Optional.of("the pod's I/O failed: " + e);
                }
                outcome = wrong.isPresent() ? "wrong" : "ok";
                if (wrong.isPresent()) {
                    violation("data:" + action.subjectId(), action.subjectId(), context, kills, wrong.get());
                }
                if (kill) {
                    driver.crash();
                    kills = List.of(
                            new Kill("between calls, right after the pod's " + action.type(), killPoint(action)));
                }
            }
        }
        for (Kill k : kills) {
            killPoints.merge(operation.type() + " | " + k.point().category(), 1, Integer::sum);
        }
        check(context, kills, false);
        operationsLog.printf(
                "#%d %s: %s, %d kill(s), %d ms%s%n",
                step,
                operation.description(),
                outcome,
                kills.size(),
                Duration.ofNanos(System.nanoTime() - begin).toMillis(),
                kills.stream().map(k -> "\n    kill " + k).collect(Collectors.joining()));
    }

    private void check(String context, List<Kill> kills, boolean afterSettleTime) throws Exception {
        Optional<String> exit = driver.ensureRunning();
        if (exit.isPresent()) {
            violation("exit:" + step, "", context, kills, exit.get());
        }
        for (Problem problem : invariants.check(driver.process(), afterSettleTime)) {
            violation(problem.key(), problem.subjectId(), context, kills, problem.text());
        }
    }

    private HostInspector.KillPoint killPoint(Operation operation) {
        return host.describe(operation.subjectId(), model.volume(operation.subjectId()), model);
    }

    /**
     * Records a violation once per key, with the step it showed after and the kills of that step,
     * and leaves the object it concerns alone from then on: what the caller believes of it is no
     * longer trustworthy, and each fault should be reported once, not by every later check.
     */
    private void violation(String key, String subjectId, String context, List<Kill> kills, String text) {
        if (!subjectId.isEmpty()) {
            model.damaged.add(subjectId);
        }
        if (violations.containsKey(key)) {
            return;
        }
        String killed = kills.isEmpty()
                ? "no kill"
                : kills.stream().map(k -> "kill " + k).collect(Collectors.joining("; "));
        String entry = "%s [%s]: %s".formatted(context, killed, text);
        violations.put(key, entry);
        System.out.println("crash: VIOLATION (seed " + seed + ") " + entry);
    }

    /**
     * The reconcile leaves files younger than its settle time alone, so leftovers of killed
     * deletes are tolerated until here. Ageing the pool's files stands for that time passing;
     * after a restart, no image without a record and no temporary file may remain.
     */
    private void afterTheSettleTime() throws Exception {
        host.agePoolFiles(SETTLE_TIME.plusMinutes(1));
        long from = driver.process().logLength();
        driver.restart();
        step++;
        String context = "#" + step + " restart once the settle time has passed";
        // The driver logs the line once its reconcile (5 s after it serves) has run to its end.
        if (!driver.process().awaitLogLine(from, RECONCILE_DONE, RECONCILE_LIMIT)) {
            violation(
                    "reconcile",
                    "",
                    context,
                    List.of(),
                    "the driver did not log \"%s\" within %s of its restart"
                            .formatted(RECONCILE_DONE, RECONCILE_LIMIT));
        }
        check(context, List.of(), true);
    }

    /** Every volume holding fsync'd data is published again (as needed) and its data read back. */
    private void readBackEveryVolume() throws Exception {
        for (Volume v : List.copyOf(model.healthyVolumes())) {
            if (v.data.isEmpty()) {
                continue;
            }
            List<Operation> steps = new ArrayList<>();
            if (!v.attached) {
                steps.add(generator.controllerPublish(v));
            }
            if (!v.staged) {
                steps.add(generator.nodeStage(v));
            }
            if (v.pods.isEmpty()) {
                steps.add(generator.nodePublish(v, OperationGenerator.PODS.getFirst()));
            }
            for (Operation operation : steps) {
                if (!model.damaged.contains(v.id)) {
                    perform(operation, false);
                }
            }
            for (String pod : List.copyOf(v.pods)) {
                if (!model.damaged.contains(v.id)) {
                    perform(generator.verifyData(v, pod), false);
                }
            }
        }
    }

    /** As the cluster would when every PVC and VolumeSnapshot is deleted; IDs a violation touched included. */
    private void tearDownThroughTheDriver() throws Exception {
        for (Volume v : List.copyOf(model.volumes.values())) {
            boolean unsure = model.damaged.contains(v.id);
            for (String pod : OperationGenerator.PODS) {
                if (unsure || v.pods.contains(pod)) {
                    perform(generator.nodeUnpublish(v, pod), false);
                }
            }
            if (unsure || v.staged) {
                perform(generator.nodeUnstage(v), false);
            }
            if (unsure || v.attached) {
                perform(generator.controllerUnpublish(v), false);
            }
        }
        // Unmounted and detached now: no kill may have left a filesystem damaged.
        for (Volume v : model.healthyVolumes()) {
            Optional<String> damage = host.filesystemDamage(v.id);
            if (damage.isPresent()) {
                violation(
                        "fsck:" + v.id,
                        v.id,
                        "after the teardown of " + v,
                        List.of(),
                        "its filesystem is damaged: " + damage.get());
            }
        }
        for (Snapshot s : List.copyOf(model.snapshots.values())) {
            perform(generator.deleteSnapshot(s), false);
        }
        for (Volume v : List.copyOf(model.volumes.values())) {
            perform(generator.deleteVolume(v), false);
        }
        // Objects of failed creates, which the caller never believed in, may exist all the same.
        for (String id : List.copyOf(model.damaged)) {
            if (id.startsWith("snap-") && !model.snapshots.containsKey(id)) {
                perform(
                        generator.deleteSnapshot(new Snapshot("unknown", id, "", CallerModel.Kind.EXT4, 0, Map.of())),
                        false);
            } else if (id.startsWith("vol-") && !model.volumes.containsKey(id)) {
                perform(generator.deleteVolume(new Volume("unknown", id, CallerModel.Kind.EXT4, 0)), false);
            }
        }
    }

    /** After the teardown: no mount below the test directory, no loop device on a pool file, an empty pool. */
    private void requireNothingLeft() {
        String context = "after the teardown through the driver";
        List<String> mounts =
                host.mountsUnder().stream().map(m -> m.mountPoint().toString()).toList();
        if (!mounts.isEmpty()) {
            violation("leak:mounts", "", context, List.of(), "mounts are left: " + mounts);
        }
        List<String> loops = host.poolLoops().stream()
                .map(l -> l.name() + " on " + l.backingFile())
                .toList();
        if (!loops.isEmpty()) {
            violation("leak:loops", "", context, List.of(), "loop devices are left: " + loops);
        }
        for (String kind : List.of("volumes", "snapshots")) {
            HostInspector.PoolFiles files = host.poolFiles(kind);
            if (!files.images().isEmpty()
                    || !files.records().isEmpty()
                    || !files.temporary().isEmpty()) {
                violation(
                        "leak:" + kind,
                        "",
                        context,
                        List.of(),
                        "the pool's %s directory still holds images %s, records %s, temporary files %s"
                                .formatted(kind, files.images().keySet(), files.records(), files.temporary()));
            }
        }
    }

    private void report(int operations, long seconds) throws IOException {
        System.out.println("crash: where the kills fell (operation | pool files of its ID, loop devices, mounts):");
        killPoints.forEach((point, count) -> System.out.printf("  %4d  %s%n", count, point));
        System.out.printf(
                "crash: %d leftover file(s) awaited the reconcile's settle time; %d driver starts took %d s%n",
                invariants == null ? 0 : invariants.awaitingReconcile.size(),
                driver.starts(),
                driver.timeStarting().toSeconds());
        String line = "crash: %d operations, %d kills, seed %d, %d violations, %d s"
                .formatted(operations, driver.kills(), seed, violations.size(), seconds);
        System.out.println(line);
        Files.writeString(
                TARGET.resolve("system-tests-summary.txt"),
                line + "\n",
                StandardOpenOption.CREATE,
                StandardOpenOption.APPEND);
    }
}
