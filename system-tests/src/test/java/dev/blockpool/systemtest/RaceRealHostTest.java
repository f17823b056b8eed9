package dev.blockpool.systemtest;

import static org.assertj.core.api.Assertions.assertThat;

import csi.v1.Csi;
import csi.v1.Csi.VolumeCapability;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import dev.blockpool.common.HostRequirements;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.common.TestKillPoint;
import dev.blockpool.csi.CsiRequests;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The races kubelet and the sidecars make on one node, against the packaged driver in mode
 * "all": each round, eight pods publish and unpublish their own targets of one or two staged
 * volumes (ext4, xfs, raw block) at once, a third of them read-only; stats and health are asked
 * at any moment; now and then a volume is expanded (controller, then node) while pods come and
 * go, a publish is sent three times at once, and an unstage races the last publishes. The driver
 * is armed with a kill point ({@link TestKillPoint}) chosen by the seed, where it stops dead
 * (a read-only bind not yet given its flags, a target bound or unmounted without an answer, an
 * image grown before its record, a record's temporary file, a loop device attached to nothing),
 * and some rounds also SIGKILL it at a random moment; every interrupted call is then repeated
 * as kubelet does, until success or a definite answer.
 *
 * <p>Violations: a read-only target that is writable (a file created through it, or {@code rw}
 * in mountinfo, also just after a kill where binds are atomic); a mount on a loop device that
 * is not the volume's or no longer bound; stacked mounts; more than one mount or loop device
 * for identical calls; ABORTED for a publish or unpublish of another target while nothing that
 * truly conflicts (stage, unstage, expansion, the same target) is under way; INTERNAL from an
 * unpublish; ImageSizeMismatch or LoopDeviceDetached in health; UNKNOWN or a definite error
 * the caller did not earn; a call without an answer within its deadline; and at the end any
 * mount, loop device or temporary file left.
 *
 * <p>{@code -Dblockpool.race.seed=S} replays a run (the default is a fixed seed);
 * {@code -Dblockpool.race.seed=random} explores; {@code -Dblockpool.race.rounds=N} runs longer;
 * {@code -Dblockpool.race.sigkills=N} kills the driver from outside N times in every round (by
 * default once in one round of five).
 * The summary line goes to {@code target/system-tests-summary.txt}, the driver's log to
 * {@code target/race-driver.log}.
 */
@NeedsRoot
class RaceRealHostTest {

    private static final long DEFAULT_SEED = 20_260_207L;
    private static final int DEFAULT_ROUNDS = 12;
    private static final int PODS = 8;
    private static final long MiB = 1L << 20;
    private static final Duration CALL_DEADLINE = Duration.ofSeconds(30);
    /** How long kubelet keeps repeating one call before the test calls it stuck. */
    private static final Duration RETRY_LIMIT = Duration.ofSeconds(60);
    /** Far more than any round's calls take, each bounded by its deadline and {@link #RETRY_LIMIT}. */
    private static final Duration WORK_LIMIT = Duration.ofMinutes(5);

    private static final Path TARGET = Path.of("target");
    private static final List<String> KILL_POINTS = List.of(
            "publish.before-flags",
            "publish.after-bind",
            "unpublish.after-unmount",
            "stage.after-attach",
            "expand.image-grown",
            "record.temp-written");

    enum Kind {
        EXT4,
        XFS,
        BLOCK
    }

    /** One volume of the pool, attached to this node for the whole run. */
    record Volume(String name, String id, Kind kind) {}

    private Path dir;
    private Path kubelet;
    private HostInspector host;
    private CrashableDriver driver;
    private long seed;
    /** SIGKILLs from outside in every round; negative for the default, one in one round of five. */
    private int sigkillsPerRound;

    private Random killRandom;
    private String armed;
    private boolean atomicBinds;
    /** Online resize2fs needs CAP_SYS_RESOURCE, which the driver inherits from this test. */
    private boolean growsExt4;

    private final List<Volume> volumes = new ArrayList<>();
    private final Set<Volume> staged = ConcurrentHashMap.newKeySet();
    /** Per volume, the calls under way that may make a publish of it wait: stage, unstage, expansion. */
    private final Map<String, AtomicInteger> exclusive = new ConcurrentHashMap<>();
    /** Targets a pod asked read-only, while it may be mounted there. */
    private final Set<Path> readOnlyTargets = ConcurrentHashMap.newKeySet();

    private final AtomicInteger calls = new AtomicInteger();
    private final AtomicInteger abortedPublishes = new AtomicInteger();
    private final Map<String, String> violations = Collections.synchronizedMap(new LinkedHashMap<>());
    private final Map<String, Integer> killsAt = Collections.synchronizedMap(new TreeMap<>());

    @BeforeEach
    void setUp() throws IOException {
        HostRequirements.assumeRootWithLoopDevices();
        for (String tool : List.of("losetup", "blkid", "mkfs.ext4", "mkfs.xfs", "resize2fs", "xfs_growfs", "kill")) {
            HostRequirements.assumeCommand(tool);
        }
        dir = Files.createTempDirectory("blockpool-race-");
        kubelet = dir.resolve("kubelet");
        DriverProcess process = new DriverProcess(dir);
        host = new HostInspector(dir, process.pool());
        driver = new CrashableDriver(process);
        atomicBinds = kernelAtLeast(5, 12);
        growsExt4 = HostRequirements.hasCapability(HostRequirements.CAP_SYS_RESOURCE);
        Files.createDirectories(TARGET);
    }

    @AfterEach
    void tearDown() throws Exception {
        if (driver != null) {
            driver.crash();
        }
        if (dir != null) {
            if (Files.exists(driver.process().log())) {
                rotateLog();
                Files.copy(
                        dir.resolve("driver-all.log"),
                        TARGET.resolve("race-driver.log"),
                        StandardCopyOption.REPLACE_EXISTING);
            }
            List<String> cleaned = host.cleanUp();
            if (!cleaned.isEmpty()) {
                System.out.println("race: cleaned up after the run:\n  " + String.join("\n  ", cleaned));
            }
        }
    }

    @Test
    void podsSharingVolumesRaceWithoutViolations() throws Exception {
        String seedProperty = System.getProperty("blockpool.race.seed", "");
        seed = seedProperty.isBlank()
                ? DEFAULT_SEED
                : seedProperty.equals("random") ? new Random().nextLong() : Long.parseLong(seedProperty);
        int rounds = Integer.getInteger("blockpool.race.rounds", DEFAULT_ROUNDS);
        sigkillsPerRound = Integer.getInteger("blockpool.race.sigkills", -1);
        System.out.printf("race: seed %d, %d rounds (replay with -Dblockpool.race.seed=%d)%n", seed, rounds, seed);
        Random seeds = new Random(seed);
        killRandom = new Random(seeds.nextLong());
        long begin = System.nanoTime();
        int done = 0;
        ExecutorService pool = Executors.newCachedThreadPool();
        try {
            startArmed();
            createVolumes();
            for (; done < rounds; done++) {
                round(done, new Random(seeds.nextLong()), pool);
                checkRound("after round " + done);
            }
            tearDownAll();
            requireNothingLeft();
        } catch (Exception e) {
            e.printStackTrace(System.out);
            violation("aborted", "round " + done + ": the run could not go on: " + e);
        } finally {
            pool.shutdownNow();
            report(done, Duration.ofNanos(System.nanoTime() - begin).toSeconds());
        }
        assertThat(violations.values())
                .withFailMessage(() -> "%d violation(s) with seed %d (replay with -Dblockpool.race.seed=%d):%n  %s"
                        .formatted(violations.size(), seed, seed, String.join("\n  ", violations.values())))
                .isEmpty();
    }

    // The driver, its kill points and kubelet's repetition of calls.

    /** Chooses the next kill point (or none) from the seed, and starts the driver with it. */
    private void startArmed() throws IOException, InterruptedException {
        armed = null;
        if (killRandom.nextDouble() < 0.8) {
            String point = KILL_POINTS.get(killRandom.nextInt(KILL_POINTS.size()));
            // A record is written at every start (the node's registration): not the first one.
            int passage = 1 + killRandom.nextInt(3) + (point.equals("record.temp-written") ? 1 : 0);
            armed = point + "@" + passage;
        }
        driver.process().environment(TestKillPoint.VARIABLE, armed);
        Optional<String> exit = driver.ensureRunning();
        exit.ifPresent(e -> violation("exit:" + driver.starts(), e));
    }

    /**
     * Called by whoever found the driver unreachable: once it is dead, the kill is recorded and
     * the driver started again; a mount it left writable at a read-only target is a violation
     * where the kernel binds read-only in one step.
     */
    private synchronized void recover() throws IOException, InterruptedException {
        if (driver.process().isAlive()) {
            return;
        }
        boolean told = armed != null && Files.readString(driver.process().log()).contains("stopping dead at");
        String point = told ? armed.substring(0, armed.indexOf('@')) : "an exit of its own";
        if (!told) {
            violation("exit:" + driver.starts(), "the driver exited by itself; its log ends:\n" + driver.logTail(15));
        }
        killsAt.merge(point, 1, Integer::sum);
        if (atomicBinds) {
            for (Path target : readOnlyTargets) {
                writableMount(target)
                        .ifPresent(m -> violation(
                                "writable-after-kill:" + target,
                                "after a kill at " + point + ", " + target + " is " + m));
            }
        }
        driver.stoppedAtKillPoint();
        // Each start's log alone tells whether that driver stopped at its kill point.
        rotateLog();
        startArmed();
    }

    private void rotateLog() throws IOException {
        Path log = driver.process().log();
        Path all = dir.resolve("driver-all.log");
        Files.writeString(all, Files.readString(log), StandardOpenOption.APPEND, StandardOpenOption.CREATE);
        Files.writeString(log, "");
    }

    /** A SIGKILL at a random moment of a round, from outside. */
    private synchronized void sigkill() throws IOException, InterruptedException {
        if (driver.process().isAlive()) {
            driver.crash();
            killsAt.merge("SIGKILL", 1, Integer::sum);
            rotateLog();
            startArmed();
        }
    }

    /** A call's outcome: its answer, or the definite status it ended with. */
    record Outcome(Object answer, Status status) {
        boolean ok() {
            return status == null;
        }

        Status.Code code() {
            return status == null ? Status.Code.OK : status.getCode();
        }
    }

    /**
     * Sends the call until it succeeds or gets a definite answer, as kubelet does: UNAVAILABLE
     * (the driver is down) after the driver is back, and ABORTED after a pause. {@code retryAlso}
     * are codes the caller expects for a while (e.g. FAILED_PRECONDITION while a racing unstage
     * holds). An answer past the call's deadline is a hang.
     */
    private Outcome call(String what, Function<DriverProcess, Object> send, Set<Status.Code> retryAlso)
            throws IOException, InterruptedException {
        long deadline = System.nanoTime() + RETRY_LIMIT.toNanos();
        long pause = 20;
        while (true) {
            calls.incrementAndGet();
            Status status;
            try {
                return new Outcome(send.apply(driver.process()), null);
            } catch (StatusRuntimeException e) {
                status = e.getStatus();
            } catch (IllegalStateException | NullPointerException | RejectedExecutionException e) {
                // the client of a driver that was just killed and restarted: closed under this call
                status = Status.UNAVAILABLE.withDescription("no client: " + e);
            }
            if (status.getCode() == Status.Code.UNAVAILABLE
                    && String.valueOf(status.getDescription()).contains("its deadline")) {
                // the driver's own answer to a call that has not finished by its deadline
                violation("hang:" + what, what + " did not finish within " + CALL_DEADLINE);
            }
            switch (status.getCode()) {
                case UNKNOWN -> violation("unknown:" + what, what + " answered UNKNOWN: " + status.getDescription());
                case DEADLINE_EXCEEDED -> violation("hang:" + what, what + " got no answer within " + CALL_DEADLINE);
                default -> {}
            }
            boolean transientCode = status.getCode() == Status.Code.UNAVAILABLE
                    || status.getCode() == Status.Code.ABORTED
                    || status.getCode() == Status.Code.CANCELLED
                    || retryAlso.contains(status.getCode());
            if (!transientCode || System.nanoTime() > deadline) {
                return new Outcome(null, status);
            }
            if (status.getCode() == Status.Code.UNAVAILABLE || status.getCode() == Status.Code.CANCELLED) {
                Thread.sleep(50);
                recover();
            } else {
                Thread.sleep(pause);
                pause = Math.min(pause * 2, 500);
            }
        }
    }

    private Outcome call(String what, Function<DriverProcess, Object> send) throws IOException, InterruptedException {
        return call(what, send, Set.of());
    }

    private void require(String what, Outcome outcome) {
        if (!outcome.ok()) {
            violation(
                    "answer:" + what,
                    what + " got the definite answer " + outcome.code() + ": "
                            + outcome.status().getDescription());
        }
    }

    /**
     * Waits for work of a round, all of it within {@link #WORK_LIMIT}. Work still running then is
     * a hang of the test itself (every call has its deadline), told with where each of its
     * threads stands so that one run shows the cause.
     */
    private static void awaitAll(List<? extends Future<?>> work, String what) throws Exception {
        long deadline = System.nanoTime() + WORK_LIMIT.toNanos();
        for (Future<?> f : work) {
            try {
                f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                throw new IllegalStateException(what + " did not end within " + WORK_LIMIT
                        + "; the test's threads stand at:\n" + testThreads());
            }
        }
    }

    private static String testThreads() {
        StringBuilder out = new StringBuilder();
        Thread.getAllStackTraces().forEach((thread, frames) -> {
            int own = 0;
            while (own < frames.length
                    && !frames[own].getClassName().startsWith(RaceRealHostTest.class.getPackageName())) {
                own++;
            }
            if (own == frames.length || thread == Thread.currentThread()) {
                return;
            }
            out.append("  ")
                    .append(thread.getName())
                    .append(" (")
                    .append(thread.getState())
                    .append(")\n");
            for (int i = 0; i < Math.min(frames.length, own + 3); i++) {
                out.append("    at ").append(frames[i]).append('\n');
            }
        });
        return out.toString();
    }

    // The volumes and one round.

    private void createVolumes() throws IOException, InterruptedException {
        for (Kind kind : Kind.values()) {
            String name = "race-" + kind.name().toLowerCase();
            long size = kind == Kind.XFS ? 320 * MiB : 64 * MiB;
            var request = Csi.CreateVolumeRequest.newBuilder()
                    .setName(name)
                    .addVolumeCapabilities(capability(kind))
                    .setCapacityRange(Csi.CapacityRange.newBuilder().setRequiredBytes(size))
                    .build();
            Outcome created = call("CreateVolume " + name, d -> d.controller().createVolume(request));
            require("CreateVolume " + name, created);
            if (!created.ok()) {
                throw new IllegalStateException("cannot create " + name);
            }
            Volume v = new Volume(
                    name,
                    ((Csi.CreateVolumeResponse) created.answer()).getVolume().getVolumeId(),
                    kind);
            volumes.add(v);
            exclusive.put(v.id(), new AtomicInteger());
            var publish = Csi.ControllerPublishVolumeRequest.newBuilder()
                    .setVolumeId(v.id())
                    .setNodeId(CallerModel.NODE_ID)
                    .setVolumeCapability(capability(kind))
                    .build();
            require(
                    "ControllerPublishVolume " + name,
                    call("ControllerPublishVolume " + name, d -> d.controller().controllerPublishVolume(publish)));
        }
    }

    private void round(int number, Random random, ExecutorService pool) throws Exception {
        List<Volume> chosen = new ArrayList<>(volumes);
        Collections.shuffle(chosen, random);
        chosen = chosen.subList(0, 1 + random.nextInt(2));
        for (Volume v : chosen) {
            stage(v);
        }
        List<Future<?>> work = new ArrayList<>();
        List<Volume> round = List.copyOf(chosen);
        for (int p = 0; p < PODS; p++) {
            Volume v = round.get(p % round.size());
            String pod = "r" + number + "-pod" + p;
            boolean readOnly = random.nextInt(3) == 0;
            boolean triple = random.nextInt(6) == 0;
            int cycles = 1 + random.nextInt(2);
            long podSeed = random.nextLong();
            work.add(pool.submit(() -> {
                pod(v, pod, readOnly, triple, cycles, new Random(podSeed));
                return null;
            }));
        }
        long lookSeed = random.nextLong();
        work.add(pool.submit(() -> {
            looks(round, new Random(lookSeed));
            return null;
        }));
        List<Volume> growable =
                round.stream().filter(v -> v.kind() != Kind.EXT4 || growsExt4).toList();
        if (random.nextInt(3) == 0 && !growable.isEmpty()) {
            Volume v = growable.get(random.nextInt(growable.size()));
            long delay = random.nextInt(300);
            work.add(pool.submit(() -> {
                Thread.sleep(delay);
                expand(v);
                return null;
            }));
        }
        int outside = sigkillsPerRound >= 0 ? sigkillsPerRound : random.nextInt(5) == 0 ? 1 : 0;
        for (int k = 0; k < outside; k++) {
            long delay = 100 + random.nextInt(800);
            work.add(pool.submit(() -> {
                Thread.sleep(delay);
                sigkill();
                return null;
            }));
        }
        awaitAll(work, "round " + number);
        // An unstage racing the last publishes: kubelet's two late pods and the unstage of the volume.
        if (random.nextInt(3) == 0) {
            Volume v = round.get(random.nextInt(round.size()));
            List<Future<?>> race = new ArrayList<>();
            for (int late = 0; late < 2; late++) {
                String pod = "r" + number + "-late" + late;
                race.add(pool.submit(() -> {
                    latePod(v, pod);
                    return null;
                }));
            }
            race.add(pool.submit(() -> {
                unstage(v);
                return null;
            }));
            awaitAll(race, "round " + number + "'s unstage racing two late pods");
        }
        for (Volume v : round) {
            if (staged.contains(v) && random.nextBoolean()) {
                unstage(v);
            }
        }
    }

    private void stage(Volume v) throws IOException, InterruptedException {
        Path staging = staging(v);
        Files.createDirectories(v.kind() == Kind.BLOCK ? staging : staging.getParent());
        var request = Csi.NodeStageVolumeRequest.newBuilder()
                .setVolumeId(v.id())
                .setStagingTargetPath(staging.toString())
                .setVolumeCapability(capability(v.kind()))
                .build();
        exclusive.get(v.id()).incrementAndGet();
        try {
            Outcome outcome = call("NodeStageVolume " + v.name(), d -> d.node().nodeStageVolume(request));
            require("NodeStageVolume " + v.name(), outcome);
            if (outcome.ok()) {
                staged.add(v);
            }
        } finally {
            exclusive.get(v.id()).decrementAndGet();
        }
    }

    /** Unstage until it succeeds; FAILED_PRECONDITION while a racing publish holds the volume. */
    private void unstage(Volume v) throws IOException, InterruptedException {
        var request = Csi.NodeUnstageVolumeRequest.newBuilder()
                .setVolumeId(v.id())
                .setStagingTargetPath(staging(v).toString())
                .build();
        exclusive.get(v.id()).incrementAndGet();
        try {
            Outcome outcome = call(
                    "NodeUnstageVolume " + v.name(),
                    d -> d.node().nodeUnstageVolume(request),
                    Set.of(Status.Code.FAILED_PRECONDITION));
            require("NodeUnstageVolume " + v.name(), outcome);
            if (outcome.ok()) {
                staged.remove(v);
                removeEmpty(v.kind() == Kind.BLOCK ? staging(v) : staging(v).getParent());
            }
        } finally {
            exclusive.get(v.id()).decrementAndGet();
        }
    }

    /** One pod: publishes its target (three times at once, if {@code triple}), uses it, unpublishes it. */
    private void pod(Volume v, String pod, boolean readOnly, boolean triple, int cycles, Random random)
            throws Exception {
        for (int cycle = 0; cycle < cycles; cycle++) {
            Path target = target(v, pod);
            if (readOnly) {
                readOnlyTargets.add(target);
            }
            Thread.sleep(random.nextInt(40));
            Outcome published;
            if (triple) {
                ExecutorService three = Executors.newFixedThreadPool(3);
                try {
                    List<Future<Outcome>> sent = new ArrayList<>();
                    for (int i = 0; i < 3; i++) {
                        sent.add(three.submit(() -> publish(v, pod, target, readOnly, true)));
                    }
                    awaitAll(sent, "three identical publishes for " + pod);
                    published = null;
                    for (Future<Outcome> f : sent) {
                        Outcome o = f.get();
                        published = published == null || !o.ok() ? o : published;
                    }
                } finally {
                    three.shutdownNow();
                }
                List<HostView.Mount> at = mountsAt(target);
                if (at.size() > 1) {
                    violation(
                            "triple:" + target, "three identical publishes left " + at.size() + " mounts at " + target);
                }
            } else {
                published = publish(v, pod, target, readOnly, false);
            }
            if (published != null && published.ok()) {
                checkPublished(v, target, readOnly);
                Thread.sleep(random.nextInt(60));
            }
            unpublish(v, pod, target);
            readOnlyTargets.remove(target);
        }
    }

    /** A late pod of a volume being unstaged: its publish may find the volume unstaged (FAILED_PRECONDITION). */
    private void latePod(Volume v, String pod) throws Exception {
        Path target = target(v, pod);
        Outcome published = publish(v, pod, target, false, false);
        if (published.ok()) {
            checkPublished(v, target, false);
        }
        unpublish(v, pod, target);
    }

    private Outcome publish(Volume v, String pod, Path target, boolean readOnly, boolean triple)
            throws IOException, InterruptedException {
        Files.createDirectories(target.getParent());
        var request = Csi.NodePublishVolumeRequest.newBuilder()
                .setVolumeId(v.id())
                .setStagingTargetPath(staging(v).toString())
                .setTargetPath(target.toString())
                .setVolumeCapability(capability(v.kind()))
                .setReadonly(readOnly)
                .build();
        String what = "NodePublishVolume " + v.name() + " for " + pod + (readOnly ? " read-only" : "");
        Outcome outcome = call(what, d -> {
            boolean quiet = exclusive.get(v.id()).get() == 0;
            try {
                return d.node().nodePublishVolume(request);
            } catch (StatusRuntimeException e) {
                if (e.getStatus().getCode() == Status.Code.ABORTED
                        && !triple
                        && quiet
                        && exclusive.get(v.id()).get() == 0) {
                    abortedPublishes.incrementAndGet();
                    violation(
                            "aborted-publish:" + v.kind(),
                            what + " answered ABORTED with no stage, unstage or expansion of the volume under way: "
                                    + e.getStatus().getDescription());
                }
                throw e;
            }
        });
        boolean unstagedMeanwhile = !staged.contains(v) || pod.contains("-late");
        if (!outcome.ok()
                && !(unstagedMeanwhile && outcome.code() == Status.Code.FAILED_PRECONDITION)
                && !(triple && outcome.code() == Status.Code.ALREADY_EXISTS)) {
            require(what, outcome);
        }
        return outcome;
    }

    private void unpublish(Volume v, String pod, Path target) throws IOException, InterruptedException {
        var request = Csi.NodeUnpublishVolumeRequest.newBuilder()
                .setVolumeId(v.id())
                .setTargetPath(target.toString())
                .build();
        String what = "NodeUnpublishVolume " + v.name() + " for " + pod;
        Outcome outcome = call(what, d -> {
            boolean quiet = exclusive.get(v.id()).get() == 0;
            try {
                return d.node().nodeUnpublishVolume(request);
            } catch (StatusRuntimeException e) {
                if (e.getStatus().getCode() == Status.Code.INTERNAL) {
                    violation("internal-unpublish:" + v.kind(), what + " answered INTERNAL: " + e.getStatus());
                }
                if (e.getStatus().getCode() == Status.Code.ABORTED
                        && quiet
                        && exclusive.get(v.id()).get() == 0) {
                    abortedPublishes.incrementAndGet();
                    violation(
                            "aborted-unpublish:" + v.kind(),
                            what + " answered ABORTED with no stage, unstage or expansion of the volume under way: "
                                    + e.getStatus().getDescription());
                }
                throw e;
            }
        });
        require(what, outcome);
        if (outcome.ok() && Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
            violation("unpublish-left:" + target, what + " succeeded but left " + target);
        }
        removeEmpty(target.getParent());
    }

    /** Right after a publish's success, before anyone else touches the target: the pod's view of it. */
    private void checkPublished(Volume v, Path target, boolean readOnly) {
        List<HostView.Mount> at = mountsAt(target);
        if (at.size() != 1) {
            violation("stacked:" + target, target + " holds " + at.size() + " mounts after its publish: " + at);
        }
        if (!readOnly) {
            return;
        }
        writableMount(target).ifPresent(m -> violation("writable:" + target, "read-only " + target + " is " + m));
        if (v.kind() == Kind.BLOCK) {
            // The kernel opens a read-only device for writing and refuses the write itself (EPERM).
            // The byte written back is the one read: a device that takes it is unchanged.
            try (FileChannel device = FileChannel.open(target, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                ByteBuffer first = ByteBuffer.allocate(1);
                device.read(first, 0);
                device.write(first.flip(), 0);
                device.force(false);
                violation("writable:" + target, "a byte was written through the read-only block target " + target);
            } catch (IOException expected) {
                // refused: a read-only device
            }
        } else {
            Path probe = target.resolve(".race-write-probe");
            try {
                Files.writeString(probe, "x");
                violation("writable:" + target, "a file was created through the read-only target " + target);
                Files.deleteIfExists(probe);
            } catch (IOException expected) {
                // refused: a read-only mount
            }
        }
    }

    /** Stats and health of the round's volumes at random moments, as kubelet and the health monitor ask. */
    private void looks(List<Volume> round, Random random) throws Exception {
        for (int i = 0; i < 12; i++) {
            Thread.sleep(random.nextInt(80));
            Volume v = round.get(random.nextInt(round.size()));
            Path path = random.nextBoolean() ? staging(v) : target(v, "r?-pod" + random.nextInt(PODS));
            List<Path> targets = published(v);
            if (!targets.isEmpty() && random.nextBoolean()) {
                path = targets.get(random.nextInt(targets.size()));
            }
            Path asked = path;
            var stats = Csi.NodeGetVolumeStatsRequest.newBuilder()
                    .setVolumeId(v.id())
                    .setVolumePath(asked.toString())
                    .build();
            Outcome s = call("NodeGetVolumeStats " + asked, d -> d.node().nodeGetVolumeStats(stats));
            if (!s.ok() && s.code() != Status.Code.NOT_FOUND) {
                require("NodeGetVolumeStats " + v.name(), s);
            }
            var health = Csi.NodeGetVolumeHealthRequest.newBuilder()
                    .setVolumeId(v.id())
                    .setStagingTargetPath(staging(v).toString())
                    .build();
            Outcome h = call("NodeGetVolumeHealth " + v.name(), d -> d.node().nodeGetVolumeHealth(health));
            require("NodeGetVolumeHealth " + v.name(), h);
            if (h.ok()) {
                falseAlarm(v, h.answer().toString());
            }
            var controllerHealth = Csi.ControllerGetVolumeHealthRequest.newBuilder()
                    .setVolumeId(v.id())
                    .build();
            Outcome c = call(
                    "ControllerGetVolumeHealth " + v.name(),
                    d -> d.controller().controllerGetVolumeHealth(controllerHealth));
            require("ControllerGetVolumeHealth " + v.name(), c);
            if (c.ok()) {
                falseAlarm(v, c.answer().toString());
            }
        }
    }

    private void falseAlarm(Volume v, String answer) {
        for (String alarm : List.of("ImageSizeMismatch", "LoopDeviceDetached")) {
            if (answer.contains(alarm)) {
                violation("alarm:" + alarm, "healthy " + v.name() + " reported " + alarm + ": " + answer.strip());
            }
        }
    }

    /** ControllerExpand, then NodeExpand at the staging path, while the pods come and go. */
    private void expand(Volume v) throws IOException, InterruptedException {
        long current = Files.size(host.volumeImage(v.id()));
        long size = current + 16 * MiB;
        var controller = Csi.ControllerExpandVolumeRequest.newBuilder()
                .setVolumeId(v.id())
                .setCapacityRange(Csi.CapacityRange.newBuilder().setRequiredBytes(size))
                .setVolumeCapability(capability(v.kind()))
                .build();
        exclusive.get(v.id()).incrementAndGet();
        try {
            Outcome grown = call(
                    "ControllerExpandVolume " + v.name(), d -> d.controller().controllerExpandVolume(controller));
            require("ControllerExpandVolume " + v.name(), grown);
            if (!grown.ok() || !staged.contains(v)) {
                return;
            }
            // A raw block volume is available at its publish paths only, not at its staging
            // path: kubelet expands it through one, so the expansion publishes one of its own.
            boolean block = v.kind() == Kind.BLOCK;
            Path path = block ? target(v, "expander") : staging(v);
            if (block && !publish(v, "expander", path, false, false).ok()) {
                return;
            }
            try {
                var node = Csi.NodeExpandVolumeRequest.newBuilder()
                        .setVolumeId(v.id())
                        .setVolumePath(path.toString())
                        .setStagingTargetPath(staging(v).toString())
                        .setCapacityRange(Csi.CapacityRange.newBuilder().setRequiredBytes(size))
                        .setVolumeCapability(capability(v.kind()))
                        .build();
                require(
                        "NodeExpandVolume " + v.name(),
                        call("NodeExpandVolume " + v.name(), d -> d.node().nodeExpandVolume(node)));
            } finally {
                if (block) {
                    unpublish(v, "expander", path);
                }
            }
        } finally {
            exclusive.get(v.id()).decrementAndGet();
        }
    }

    // The checks between rounds and at the end.

    /** Between rounds no pod holds a target: only the staged volumes' mounts and devices may be there. */
    private void checkRound(String when) throws IOException, InterruptedException {
        recover();
        Map<Path, List<HostView.Mount>> byPoint = HostView.mounts().stream()
                .filter(m -> m.mountPoint().startsWith(HostInspector.canonical(dir)))
                .collect(Collectors.groupingBy(HostView.Mount::mountPoint));
        List<HostView.Loop> loops = HostView.loops();
        for (var entry : byPoint.entrySet()) {
            Path point = entry.getKey();
            if (entry.getValue().size() > 1) {
                violation("stacked:" + point, when + ": " + entry.getValue().size() + " mounts stacked at " + point);
            }
            Optional<Volume> owner = volumes.stream()
                    .filter(v -> point.equals(HostInspector.canonical(staging(v))))
                    .findFirst();
            if (owner.isEmpty() || !staged.contains(owner.get())) {
                violation("left:" + point, when + ": " + point + " is mounted, and no staged volume is there");
                continue;
            }
            for (HostView.Mount m : entry.getValue()) {
                Path image =
                        HostInspector.canonical(host.volumeImage(owner.get().id()));
                boolean ours = loops.stream()
                        .anyMatch(l ->
                                l.device().equals(m.source()) && l.backingFile().equals(image));
                if (!ours && owner.get().kind() != Kind.BLOCK) {
                    violation(
                            "foreign:" + point,
                            when + ": " + point + " is on " + m.source() + ", not a loop device bound to " + image);
                }
            }
        }
        for (Volume v : volumes) {
            Path image = HostInspector.canonical(host.volumeImage(v.id()));
            // A kill between a read-only block unpublish's unmount and the release of its own
            // read-only device leaves that device, unused, until the unstage releases it: only
            // the writable ones count here, and at the end none may be left.
            long bound = loops.stream()
                    .filter(l -> l.backingFile().equals(image))
                    .filter(l -> v.kind() != Kind.BLOCK || !readOnlyDevice(l.device()))
                    .count();
            long expected = staged.contains(v) ? 1 : 0;
            if (bound != expected) {
                violation(
                        "loops:" + v.name() + ":" + when,
                        when + ": " + v.name() + " has " + bound + " loop device(s), " + expected + " expected");
            }
            if (staged.contains(v)) {
                var health = Csi.NodeGetVolumeHealthRequest.newBuilder()
                        .setVolumeId(v.id())
                        .setStagingTargetPath(staging(v).toString())
                        .build();
                Outcome h =
                        call("NodeGetVolumeHealth " + v.name(), d -> d.node().nodeGetVolumeHealth(health));
                require("NodeGetVolumeHealth " + v.name(), h);
                if (h.ok() && h.answer().toString().contains("reason:")) {
                    violation("health:" + v.name(), when + ": healthy " + v.name() + " reported " + h.answer());
                }
            }
        }
    }

    private void tearDownAll() throws IOException, InterruptedException {
        for (Volume v : volumes) {
            if (staged.contains(v)) {
                unstage(v);
            }
            var unpublish = Csi.ControllerUnpublishVolumeRequest.newBuilder()
                    .setVolumeId(v.id())
                    .setNodeId(CallerModel.NODE_ID)
                    .build();
            require(
                    "ControllerUnpublishVolume " + v.name(),
                    call(
                            "ControllerUnpublishVolume " + v.name(),
                            d -> d.controller().controllerUnpublishVolume(unpublish)));
            var delete =
                    Csi.DeleteVolumeRequest.newBuilder().setVolumeId(v.id()).build();
            require(
                    "DeleteVolume " + v.name(),
                    call("DeleteVolume " + v.name(), d -> d.controller().deleteVolume(delete)));
        }
    }

    /**
     * No mount below the test directory, no loop device on the pool, and no temporary file: a
     * kill's leftovers go at the start that follows it (its reconcile runs 5 s after serving).
     */
    private void requireNothingLeft() throws InterruptedException {
        List<String> mounts =
                host.mountsUnder().stream().map(m -> m.mountPoint().toString()).toList();
        if (!mounts.isEmpty()) {
            violation("leak:mounts", "mounts are left: " + mounts);
        }
        List<String> loops = host.poolLoops().stream()
                .map(l -> l.name() + " on " + l.backingFile())
                .toList();
        if (!loops.isEmpty()) {
            violation("leak:loops", "loop devices are left: " + loops);
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
        List<Path> temporary;
        do {
            temporary = temporaryFiles();
            if (temporary.isEmpty()) {
                break;
            }
            Thread.sleep(200);
        } while (System.nanoTime() < deadline);
        if (!temporary.isEmpty()) {
            violation("leak:temporary", "temporary files are left in the pool after its reconcile: " + temporary);
        }
    }

    private List<Path> temporaryFiles() {
        try (Stream<Path> files = Files.walk(driver.process().pool())) {
            return files.filter(f -> f.getFileName().toString().endsWith(".tmp"))
                    .toList();
        } catch (IOException e) {
            return List.of(Path.of("(cannot list the pool: " + e + ")"));
        }
    }

    private void report(int rounds, long seconds) throws IOException {
        System.out.println("race: kills by point: " + killsAt);
        String line = "race: %d rounds, %d kills, %d calls, seed %d, %d violations, %d s"
                .formatted(rounds, driver.kills(), calls.get(), seed, violations.size(), seconds);
        System.out.println(line);
        Files.writeString(
                TARGET.resolve("system-tests-summary.txt"),
                line + "\n",
                StandardOpenOption.CREATE,
                StandardOpenOption.APPEND);
    }

    private void violation(String key, String text) {
        if (violations.putIfAbsent(key, text) == null) {
            System.out.println("race: VIOLATION (seed " + seed + ") " + text);
        }
    }

    // Paths, capabilities and the mount table.

    private static VolumeCapability capability(Kind kind) {
        return switch (kind) {
            case EXT4 -> CsiRequests.mount("ext4", Mode.SINGLE_NODE_MULTI_WRITER);
            case XFS -> CsiRequests.mount("xfs", Mode.SINGLE_NODE_MULTI_WRITER);
            case BLOCK -> CsiRequests.block(Mode.SINGLE_NODE_MULTI_WRITER);
        };
    }

    private Path staging(Volume v) {
        return v.kind() == Kind.BLOCK
                ? kubelet.resolve("plugins/kubernetes.io/csi/volumeDevices/staging/" + v.name())
                : kubelet.resolve("plugins/kubernetes.io/csi/blockpool.csi.dev/" + v.name() + "/globalmount");
    }

    private Path target(Volume v, String pod) {
        return v.kind() == Kind.BLOCK
                ? kubelet.resolve("plugins/kubernetes.io/csi/volumeDevices/publish/" + v.name() + "/" + pod)
                : kubelet.resolve("pods/" + pod + "/volumes/kubernetes.io~csi/" + v.name() + "/mount");
    }

    private List<Path> published(Volume v) {
        Path staging = HostInspector.canonical(staging(v));
        return HostView.mounts().stream()
                .map(HostView.Mount::mountPoint)
                .filter(p -> p.startsWith(HostInspector.canonical(kubelet)) && !p.equals(staging))
                .filter(p -> p.toString().contains("/" + v.name() + "/"))
                .toList();
    }

    private static List<HostView.Mount> mountsAt(Path path) {
        Path listed = HostInspector.canonical(path);
        return HostView.mounts().stream()
                .filter(m -> m.mountPoint().equals(listed))
                .toList();
    }

    /** The mountinfo line of a mount at {@code target} whose per-mount options are not read-only. */
    private static Optional<String> writableMount(Path target) {
        String listed = HostInspector.canonical(target).toString();
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
                String[] fields = line.split(" ");
                if (fields.length > 5 && unescape(fields[4]).equals(listed) && !fields[5].startsWith("ro")) {
                    return Optional.of("mounted " + fields[5] + ": " + line);
                }
            }
        } catch (IOException e) {
            return Optional.of("unreadable mountinfo: " + e);
        }
        return Optional.empty();
    }

    private static String unescape(String field) {
        return field.replace("\\040", " ")
                .replace("\\011", "\t")
                .replace("\\012", "\n")
                .replace("\\134", "\\");
    }

    private static boolean readOnlyDevice(String device) {
        try {
            return Files.readString(Path.of("/sys/block/" + Path.of(device).getFileName() + "/ro"))
                    .strip()
                    .equals("1");
        } catch (IOException gone) {
            return false;
        }
    }

    private static void removeEmpty(Path directory) {
        try {
            Files.deleteIfExists(directory);
        } catch (IOException notEmpty) {
            // a block volume's directory holds the other pods' files, or a mount is still there
        }
    }

    private static boolean kernelAtLeast(int major, int minor) {
        String[] release = System.getProperty("os.version").split("[.-]");
        int ma = Integer.parseInt(release[0]);
        int mi = Integer.parseInt(release[1]);
        return ma > major || (ma == major && mi >= minor);
    }
}
