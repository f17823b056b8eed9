package dev.blockpool.pool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.HealthProblem;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.common.StorageException;
import dev.blockpool.common.StorageException.Kind;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The pool's promises on a real 300 MiB ext4 filesystem: what the policy allows is what can be
 * made, whatever the order, concurrency or restarts, and nothing refused leaves a trace. Needs
 * root; skipped otherwise.
 */
@NeedsRoot
class PoolCapacityRealHostTest {

    private static final long MIB = 1 << 20;

    private final CommandRunner commands = new ProcessCommandRunner();

    @TempDir
    Path work;

    @RegisterExtension
    final ScratchFilesystems filesystems = new ScratchFilesystems();

    private Path mountPoint;

    /** The pool on the test's filesystem, made at the first open. */
    private Pool open(CapacityPolicy policy) {
        if (mountPoint == null) {
            mountPoint = filesystems.make(work, 300 * MIB, "mkfs.ext4", "-q", "-F");
        }
        return Pool.open(
                mountPoint.resolve("pool"), commands, Clock.systemUTC(), Duration.ZERO, new BlockingCalls(), policy);
    }

    @Test
    void withoutOverCommitThePoolPromisesNoMoreThanItsFilesystemHolds() {
        Pool pool = open(CapacityPolicy.DEFAULT);
        PoolCapacity.Reading empty = pool.capacity().read();
        assertThat(empty.limitBytes()).isLessThan(empty.sizeBytes());
        assertThat(empty.promisedBytes()).isZero();

        Volume first = pool.volumes().create(VolumeSpecs.sparse("first", 200 * MIB));
        PoolCapacity.Reading one = pool.capacity().read();
        assertThat(one.promisedBytes()).isEqualTo(200 * MIB);
        assertThat(one.promisableBytes(Allocation.SPARSE)).isEqualTo(empty.limitBytes() - 200 * MIB);

        assertThatThrownBy(() -> pool.volumes().create(VolumeSpecs.sparse("second", 200 * MIB)))
                .isInstanceOfSatisfying(StorageException.class, e -> {
                    assertThat(e.kind()).isEqualTo(Kind.EXHAUSTED);
                    assertThat(e.getMessage())
                            .contains(
                                    "cannot promise",
                                    Ids.volumeIdFor("second"),
                                    "no over-commit",
                                    "limit of " + one.limitBytes());
                });
        assertThat(pool.volumes().imagePath(Ids.volumeIdFor("second"))).doesNotExist();
        assertThat(pool.volumes().list()).containsExactly(first);

        // What the capacity says is left can be made, exactly; then nothing more.
        long left = one.promisableBytes(Allocation.SPARSE) / MIB * MIB;
        pool.volumes().create(VolumeSpecs.sparse("rest", left));
        assertThat(pool.capacity().read().promisableBytes(Allocation.SPARSE)).isLessThan(MIB);
        assertThatThrownBy(() -> pool.volumes().create(VolumeSpecs.sparse("one-more", MIB)))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(Kind.EXHAUSTED));

        pool.volumes().delete(first.id());
        assertThat(pool.capacity().read().promisedBytes()).isEqualTo(left);
    }

    @Test
    void withOverCommitTheThirdVolumeIsRefusedAndEachPromiseShrinksTheCapacity() {
        Pool pool = open(CapacityPolicy.overcommitted(2.0));
        long before =
                pool.capacity().read().limitBytes() - pool.capacity().read().promisedBytes();
        pool.volumes().create(VolumeSpecs.sparse("a", 200 * MIB));
        long afterOne =
                pool.capacity().read().limitBytes() - pool.capacity().read().promisedBytes();
        pool.volumes().create(VolumeSpecs.sparse("b", 200 * MIB));
        PoolCapacity.Reading two = pool.capacity().read();

        assertThat(afterOne).isEqualTo(before - 200 * MIB);
        assertThat(two.limitBytes() - two.promisedBytes()).isEqualTo(afterOne - 200 * MIB);
        assertThat(two.beyondSize()).isTrue();
        assertThatThrownBy(() -> pool.volumes().create(VolumeSpecs.sparse("c", 200 * MIB)))
                .isInstanceOfSatisfying(StorageException.class, e -> {
                    assertThat(e.kind()).isEqualTo(Kind.EXHAUSTED);
                    assertThat(e.getMessage()).contains("over-commit ratio 2.0");
                });
        assertThat(pool.volumes().list()).hasSize(2);
    }

    @Test
    void createsAtOnceNeverTogetherTakeMoreThanIsLeft() throws Exception {
        Pool pool = open(CapacityPolicy.DEFAULT);
        long limit = pool.capacity().read().limitBytes();
        long each = 50 * MIB;
        List<Callable<Boolean>> creates = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            String name = "racer-" + i;
            creates.add(() -> {
                try {
                    pool.volumes().create(VolumeSpecs.sparse(name, each));
                    return true;
                } catch (StorageException e) {
                    if (e.kind() != Kind.EXHAUSTED) {
                        throw e;
                    }
                    return false;
                }
            });
        }
        int made = 0;
        try (ExecutorService threads = Executors.newFixedThreadPool(12)) {
            for (Future<Boolean> create : threads.invokeAll(creates)) {
                made += create.get() ? 1 : 0;
            }
        }

        assertThat(made).isEqualTo((int) (limit / each));
        assertThat(pool.volumes().list()).hasSize(made);
        assertThat(pool.capacity().read().promisedBytes()).isEqualTo(made * each);
    }

    @Test
    void anExpansionPromisesItsGrowthAndARefusedOneChangesNothing() {
        Pool pool = open(CapacityPolicy.DEFAULT);
        Volume volume = pool.volumes().create(VolumeSpecs.sparse("grows", 100 * MIB));
        long limit = pool.capacity().read().limitBytes();

        pool.volumes().expand(volume.id(), 150 * MIB);
        assertThat(pool.capacity().read().promisedBytes()).isEqualTo(150 * MIB);

        assertThatThrownBy(() -> pool.volumes().expand(volume.id(), limit + MIB))
                .isInstanceOfSatisfying(StorageException.class, e -> {
                    assertThat(e.kind()).isEqualTo(Kind.EXHAUSTED);
                    assertThat(e.getMessage()).contains("volume " + volume.id());
                });
        assertThat(pool.volumes().get(volume.id()).capacityBytes()).isEqualTo(150 * MIB);
        assertThat(pool.volumes().imagePath(volume.id())).hasSize(150 * MIB);
    }

    @Test
    void aSnapshotPromisesWhatItHoldsAndTheCountSurvivesAReopen() throws IOException {
        Pool pool = open(CapacityPolicy.DEFAULT);
        Volume volume = pool.volumes().create(VolumeSpecs.sparse("data", 100 * MIB));
        write(pool.volumes().imagePath(volume.id()), 30 * MIB);

        Snapshot snapshot = pool.snapshots().create("snap", volume.id(), pool.volumes());
        long held = PoolCapacity.allocatedBytes(pool.snapshots().imagePath(snapshot.id()));
        assertThat(held).isBetween(30 * MIB, 31 * MIB);
        PoolCapacity.Reading reading = pool.capacity().read();
        assertThat(reading.promisedBytes()).isEqualTo(100 * MIB + held);

        // A restore promises its whole size, whatever it shares with its snapshot.
        pool.volumes()
                .create(new VolumeSpec(
                        "restored",
                        120 * MIB,
                        "ext4",
                        Allocation.SPARSE,
                        Set.of(AccessType.MOUNT),
                        Map.of(),
                        Optional.of(new ContentSource(ContentSource.Kind.SNAPSHOT, snapshot.id()))));
        assertThat(pool.capacity().read().promisedBytes()).isEqualTo(220 * MIB + held);

        Pool reopened = open(CapacityPolicy.DEFAULT);
        PoolCapacity.Reading afterReopen = reopened.capacity().read();
        assertThat(afterReopen.promisedBytes()).isEqualTo(220 * MIB + held);
        // Less is left than a second snapshot of the 30 MiB would hold.
        assertThat(afterReopen.limitBytes() - afterReopen.promisedBytes()).isLessThan(held);
        assertThatThrownBy(() -> reopened.snapshots().create("snap-2", volume.id(), reopened.volumes()))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(Kind.EXHAUSTED));
        assertThat(reopened.snapshots().list()).containsExactly(snapshot);
        assertThat(reopened.snapshots().imagePath(Ids.snapshotIdFor("snap-2"))).doesNotExist();
    }

    @Test
    void whatAnotherProcessChangesInThePoolIsCounted() throws IOException {
        Pool pool = open(CapacityPolicy.DEFAULT);
        Pool other = open(CapacityPolicy.DEFAULT);
        pool.volumes().create(VolumeSpecs.sparse("mine", 40 * MIB));
        assertThat(pool.capacity().read().promisedBytes()).isEqualTo(40 * MIB);

        Volume theirs = other.volumes().create(VolumeSpecs.sparse("theirs", 60 * MIB));
        assertThat(pool.capacity().read().promisedBytes()).isEqualTo(100 * MIB);
        other.volumes().expand(theirs.id(), 80 * MIB);
        assertThat(pool.capacity().read().promisedBytes()).isEqualTo(120 * MIB);

        // A record removed behind both (by hand): what is left in the pool is what counts.
        Files.delete(mountPoint.resolve("pool/volumes/" + theirs.id() + ".json"));
        assertThat(pool.capacity().read().promisedBytes()).isEqualTo(40 * MIB);
    }

    @Test
    void aThinPoolSaysItIsNearlyFullWhileThereIsRoomAndOnlyForSparseVolumes() throws IOException {
        Pool pool = open(new CapacityPolicy(2.0, CapacityPolicy.DEFAULT.reserve(), CapacityPolicy.Amount.parse("25%")));
        Volume a = pool.volumes().create(VolumeSpecs.sparse("a", 200 * MIB));
        Volume thick =
                pool.volumes().create(VolumeSpecs.of("thick", 8 * MIB, Allocation.PREALLOCATED, AccessType.MOUNT));
        pool.volumes().create(VolumeSpecs.sparse("b", 200 * MIB));
        assertThat(pool.health().pool()).isEmpty();

        write(pool.volumes().imagePath(a.id()), 200 * MIB);
        PoolCapacity.Reading reading = pool.capacity().read();
        assertThat(reading.availableBytes()).as("room is left").isGreaterThan(8 * MIB);

        assertThat(pool.health().pool()).extracting(HealthProblem::reason).containsExactly("PoolNearlyFull");
        assertThat(pool.health().volume(a.id()).problems())
                .extracting(HealthProblem::reason)
                .containsExactly("PoolNearlyFull");
        assertThat(pool.health().volume(thick.id()).problems()).isEmpty();
        assertThat(pool.health().pool().getFirst().message()).contains("promised", "sparse");

        pool.volumes().delete(a.id());
        assertThat(pool.health().pool()).isEmpty();
    }

    /** Writes {@code bytes} of data at the start of {@code image}, and flushes them. */
    private static void write(Path image, long bytes) throws IOException {
        try (FileChannel channel = FileChannel.open(image, StandardOpenOption.WRITE)) {
            byte[] data = new byte[(int) MIB];
            Arrays.fill(data, (byte) 1);
            for (long at = 0; at < bytes; at += MIB) {
                channel.write(ByteBuffer.wrap(data), at);
            }
            channel.force(false);
        }
    }
}
