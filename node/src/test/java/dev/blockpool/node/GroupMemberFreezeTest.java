package dev.blockpool.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.FsType;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.common.StorageException;
import dev.blockpool.host.FakeHost;
import dev.blockpool.host.filesystems.FakeFreezeCalls;
import dev.blockpool.host.filesystems.FilesystemFreezes;
import dev.blockpool.host.loops.LoopAttachments;
import dev.blockpool.pool.MemberFreeze;
import dev.blockpool.pool.NodeClaim;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.VolumeSpecs;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A group snapshot's freeze on a node-local pool, its failures injected through a fake of the
 * kernel's freeze calls: a frozen file system is always thawed, and told while it is not. No
 * timing: the freeze's bound passes on a clock the test moves, a writer that holds a file system
 * is a latch, and each look of the driver's background retry is called by the test. What the
 * group snapshot makes of a freeze is GroupControllerServiceTest's.
 */
class GroupMemberFreezeTest {

    private static final Duration A_DAY = Duration.ofDays(1);
    private static final String NODE = "node-a";

    @TempDir
    Path dir;

    private final FakeFreezeCalls kernel = new FakeFreezeCalls();
    private final BlockingCalls blocking = new BlockingCalls("freeze-test", 4);
    private final MovableClock clock = new MovableClock();
    /** Each volume's PVC name, which names its staging path. */
    private final Map<String, String> names = new HashMap<>();

    private FakeHost host;
    private Pool pool;
    private NodeClaim claim;
    private GroupMemberFreeze members;
    private String first;
    private String second;

    @BeforeEach
    void start() {
        host = new FakeHost(dir.resolve("dev"));
        pool = Pool.open(dir.resolve("pool"), new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO);
        claim = pool.nodeClaim(NODE);
        assertThat(claim.problem()).isEmpty();
        members = freeze(A_DAY, () -> claim.problem().isEmpty());
        members.thawLeftovers(); // as the driver does at its start
        first = stagedVolume("pvc-data");
        second = stagedVolume("pvc-log");
    }

    @AfterEach
    void stop() {
        claim.close();
        pool.controllerClaim().release();
    }

    @Test
    void aThawTheKernelRefusesIsToldAndTriedAgainWhileTheDriverRuns() {
        kernel.thawFailure =
                StorageException.internal("cannot thaw the file system mounted at %s: EIO", staging(first));

        assertThatThrownBy(() -> freezeAndThaw(members, first, second)).satisfies(this::isUnavailable);

        assertThat(kernel.frozen).containsExactlyInAnyOrder(staging(first), staging(second));
        assertThat(marks()).containsExactlyInAnyOrder(first, second);
        assertThat(members.frozenCount()).isEqualTo(2);
        assertThat(members.frozen(first))
                .hasValueSatisfying(why -> assertThat(why)
                        .contains("may have been frozen since " + clock.instant())
                        .contains("EIO")
                        .contains("fsfreeze --unfreeze " + staging(first)));

        members.look(); // still refused: kept, and told
        assertThat(marks()).containsExactlyInAnyOrder(first, second);

        kernel.thawFailure = null;
        members.look();

        assertThat(kernel.frozen).isEmpty();
        assertThat(marks()).isEmpty();
        assertThat(members.frozen(first)).isEmpty();
        assertThat(members.frozenCount()).isZero();
    }

    @Test
    void aRetriedGroupSnapshotThawsWhatTheCallBeforeItCouldNot() {
        freezeWhoseThawTheKernelRefuses(first, second);

        members.thawLeft(List.of(first, second)); // what a retry of the group, found made, asks

        assertThat(kernel.frozen).isEmpty();
        assertThat(marks()).isEmpty();
    }

    @Test
    void aFreezeOfAVolumeAnEarlierFreezeLeftThawsItFirst() {
        freezeWhoseThawTheKernelRefuses(first, second);
        int before = kernel.log.size();

        freezeAndThaw(members, first, second); // a retry whose group was not made

        assertThat(kernel.log.subList(before, kernel.log.size()))
                .as("what was left is thawed before it is frozen again")
                .containsExactly(
                        "FITHAW staging-pvc-log",
                        "FITHAW staging-pvc-data",
                        "FIFREEZE staging-pvc-data",
                        "FIFREEZE staging-pvc-log",
                        "FITHAW staging-pvc-log",
                        "FITHAW staging-pvc-data");
        assertThat(kernel.frozen).isEmpty();
        assertThat(marks()).isEmpty();
    }

    @Test
    void aFreezePastItsDeadlineKeepsItsMarkUntilTheKernelHasReturnedAndItIsUndone() throws Exception {
        GroupMemberFreeze impatient = freeze(Duration.ZERO, () -> true);
        CountDownLatch writer = new CountDownLatch(1);
        kernel.writers.put(staging(first), writer);

        assertThatThrownBy(() -> impatient.freeze(List.of(first))).hasMessageContaining("a writer holds it");

        assertThat(marks()).as("the FIFREEZE may still complete").containsExactly(first);
        impatient.look();
        assertThat(marks()).containsExactly(first);
        assertThat(impatient.frozen(first))
                .hasValueSatisfying(why -> assertThat(why).contains("has not returned from the kernel"));
        kernel.waitingForWriter.await(); // the FIFREEZE has reached the kernel, whenever its caller gave up
        assertThat(kernel.log).as("no FITHAW taken for an answer").containsExactly("FIFREEZE staging-pvc-data");

        writer.countDown(); // the writer lets go: the freeze completes, and is undone at once
        kernel.thawed.await();
        impatient.look();

        assertThat(kernel.frozen).isEmpty();
        assertThat(marks()).isEmpty();
        assertThat(impatient.frozenCount()).isZero();
    }

    @Test
    void aFreezePastItsBoundIsThawedAndIsNotHeldThroughout() throws Exception {
        CountDownLatch writer = new CountDownLatch(1);
        kernel.writers.put(staging(second), writer);
        CompletableFuture<Boolean> heldThroughout = CompletableFuture.supplyAsync(() -> {
            try (MemberFreeze.Frozen frozen = members.freeze(List.of(first, second))) {
                return frozen.heldThroughout();
            }
        });
        try {
            kernel.waitingForWriter.await(); // the first is frozen, the second waits for its writer

            clock.move(GroupMemberFreeze.BOUND);
            members.look();

            assertThat(kernel.frozen).as("thawed at the bound").doesNotContain(staging(first));
            assertThat(marks()).as("the second's FIFREEZE has not returned").containsExactly(second);
        } finally {
            writer.countDown();
        }
        assertThat(heldThroughout.get()).as("not of one instant").isFalse();

        members.look(); // the second, frozen once its writer let go, is no freeze's any more
        assertThat(kernel.frozen).isEmpty();
        assertThat(marks()).isEmpty();
    }

    @Test
    void aMarkWhoseFileSystemIsNotSeenIsKeptAndToldUntilItIsRemoved() throws Exception {
        String unseen = stagedVolume("pvc-unseen");
        host.mounts.removeIf(m -> m.mountPoint().equals(staging(unseen))); // in a mount namespace not ours
        pool.freezeMarks().mark(unseen);

        GroupMemberFreeze restarted = freeze(A_DAY, () -> true);
        restarted.thawLeftovers();

        assertThat(marks()).containsExactly(unseen);
        assertThat(restarted.frozenCount()).isEqualTo(1);
        assertThat(restarted.frozen(unseen))
                .hasValueSatisfying(why -> assertThat(why)
                        .contains("no file system mounted from it is seen")
                        .contains(pool.freezeMarks().markOf(unseen).toString()));

        Files.delete(pool.freezeMarks().markOf(unseen)); // what the message says to do once thawed by hand
        restarted.look();
        assertThat(restarted.frozen(unseen)).isEmpty();
    }

    /** Where a driver was killed: what it left in the pool and in the kernel. */
    enum Killed {
        /** Its mark written, its FIFREEZE not yet made. */
        AFTER_THE_MARK(false),
        /** Its FIFREEZE returned, the group's members being taken. */
        AFTER_THE_FREEZE(true),
        /** Its FITHAW returned, its mark not yet removed. */
        AFTER_THE_THAW(false);

        final boolean frozen;

        Killed(boolean frozen) {
            this.frozen = frozen;
        }
    }

    @ParameterizedTest
    @EnumSource(Killed.class)
    void whatAKilledDriverLeftIsThawedByTheNextOne(Killed killed) {
        pool.freezeMarks().mark(first);
        if (killed.frozen) {
            kernel.frozen.add(staging(first));
        }

        freeze(A_DAY, () -> claim.problem().isEmpty()).thawLeftovers();

        assertThat(kernel.frozen).isEmpty();
        assertThat(marks()).isEmpty();
    }

    @Test
    void aSecondProcessOnThePoolThawsNothingUntilItHoldsTheNodesClaim() {
        pool.freezeMarks().mark(first);
        kernel.frozen.add(staging(first)); // the first process's freeze, live
        NodeClaim secondClaim = pool.nodeClaim(NODE);
        try {
            GroupMemberFreeze second = freeze(A_DAY, () -> secondClaim.problem().isEmpty());

            second.thawLeftovers();
            second.look();
            assertThat(kernel.frozen).containsExactly(staging(first));
            assertThat(marks()).containsExactly(first);

            claim.close(); // the first process is gone
            second.look();
            assertThat(kernel.frozen).isEmpty();
            assertThat(marks()).isEmpty();
        } finally {
            secondClaim.close();
        }
    }

    @Test
    void leftoversTakenOnceTheClaimIsHeldSpareAFreezeOfThisProcess() {
        NodeClaim secondClaim = pool.nodeClaim(NODE);
        try {
            GroupMemberFreeze second = freeze(A_DAY, () -> secondClaim.problem().isEmpty());
            second.thawLeftovers(); // not the node's holder yet: nothing taken
            try (MemberFreeze.Frozen frozen = second.freeze(List.of(first))) {
                claim.close();
                second.look(); // takes the node's marks, its own among them

                assertThat(kernel.frozen).as("held by its freeze").containsExactly(staging(first));
                assertThat(frozen.heldThroughout()).isTrue();
            }
            assertThat(kernel.frozen).isEmpty();
            assertThat(marks()).isEmpty();
        } finally {
            secondClaim.close();
        }
    }

    private GroupMemberFreeze freeze(Duration freezeDeadline, BooleanSupplier holdsTheNode) {
        FilesystemFreezes freezes =
                new FilesystemFreezes(new LoopAttachments(host, host), kernel, blocking, freezeDeadline, A_DAY);
        return new GroupMemberFreeze(pool, freezes, clock, GroupMemberFreeze.BOUND, holdsTheNode);
    }

    /** A volume of 1 MiB for one writer's file system, made in the pool and staged on the fake host, at {@link #staging}. */
    private String stagedVolume(String name) {
        String volumeId =
                pool.volumes().create(VolumeSpecs.sparse(name, 1 << 20)).id();
        Path image = pool.volumes().imagePath(volumeId);
        host.mount(host.attach(image, false).device(), dir.resolve("staging-" + name), FsType.EXT4, List.of());
        names.put(volumeId, name);
        return volumeId;
    }

    private Path staging(String volumeId) {
        return dir.resolve("staging-" + names.get(volumeId));
    }

    /** A freeze of these volumes, closed at once: as a group snapshot whose members are taken. */
    private static void freezeAndThaw(GroupMemberFreeze freeze, String... volumeIds) {
        try (MemberFreeze.Frozen frozen = freeze.freeze(List.of(volumeIds))) {
            assertThat(frozen.heldThroughout()).isTrue();
        }
    }

    /** A freeze of these volumes whose thaw the kernel refuses once: it leaves them frozen and marked. */
    private void freezeWhoseThawTheKernelRefuses(String... volumeIds) {
        kernel.thawFailure =
                StorageException.internal("cannot thaw the file system mounted at %s: EIO", staging(volumeIds[0]));
        assertThatThrownBy(() -> freezeAndThaw(members, volumeIds)).satisfies(this::isUnavailable);
        kernel.thawFailure = null;
    }

    /** The failure a group snapshot answers UNAVAILABLE with: a retry later may find the file system thawed. */
    private void isUnavailable(Throwable failure) {
        assertThat(failure)
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.UNAVAILABLE));
    }

    private List<String> marks() {
        return pool.freezeMarks().marked();
    }

    /** A clock that moves when the test says. */
    private static final class MovableClock extends Clock {
        private volatile Instant now = Instant.parse("2026-11-28T07:00:00Z");

        void move(Duration by) {
            now = now.plus(by);
        }

        @Override
        public Instant instant() {
            return now;
        }

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return this;
        }
    }
}
