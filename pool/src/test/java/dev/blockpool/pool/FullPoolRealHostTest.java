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
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A small, real pool filesystem (ext4 without reserved blocks, on a loop device) run out of
 * space. Needs root; skipped otherwise.
 */
@NeedsRoot
class FullPoolRealHostTest {

    private static final long MIB = 1 << 20;

    private final CommandRunner commands = new ProcessCommandRunner();

    @TempDir
    Path work;

    @RegisterExtension
    final ScratchFilesystems filesystems = new ScratchFilesystems();

    private Path mountPoint;
    private Pool pool;

    @BeforeEach
    void setUp() {
        mountPoint = filesystems.make(work, 64 * MIB, "mkfs.ext4", "-q", "-F", "-m", "0");
        // Over-committed: a pool that promises no more than it holds never fills from its volumes' writes.
        pool = Pool.open(
                mountPoint.resolve("pool"),
                commands,
                Clock.systemUTC(),
                Duration.ZERO,
                new BlockingCalls(),
                CapacityPolicy.overcommitted(4.0));
    }

    @Test
    void aRetryCountsTheImageItsInterruptedAttemptLeftAsFreeSpace() {
        // An attempt that died after preallocating most of the pool, before its record was written.
        long size = 40 * MIB;
        VolumeSpec spec = VolumeSpecs.of("big", size, Allocation.PREALLOCATED, AccessType.BLOCK);
        Path leftover = pool.volumes().imagePath(Ids.volumeIdFor("big"));
        new ImageFiles(commands).create(leftover, size, Allocation.PREALLOCATED);
        assertThat(pool.space().availableBytes()).isLessThan(size);
        assertKind(
                Kind.EXHAUSTED,
                () -> pool.volumes().create(VolumeSpecs.of("other", size, Allocation.PREALLOCATED, AccessType.BLOCK)));

        Volume volume = pool.volumes().create(spec);

        assertThat(pool.volumes().imagePath(volume.id())).hasSize(size);
        assertThat(pool.volumes().list()).containsExactly(volume);
    }

    @Test
    void metadataWritesIntoAFullPoolAreNoSpaceAndLeaveNoImage() throws IOException {
        fill(mountPoint.resolve("filler"));

        assertThatThrownBy(() -> pool.nodes().register(new NodeRecord("node-1", 8, Map.of())))
                .isInstanceOfSatisfying(StorageException.class, e -> {
                    assertThat(e.kind()).isEqualTo(Kind.EXHAUSTED);
                    assertThat(e.getMessage()).contains("node-1.json", "No space left on device");
                });
        // An empty volume needs no blocks of its own: only its record's write meets the full filesystem.
        VolumeSpec empty = VolumeSpecs.of("empty", 0, Allocation.SPARSE, AccessType.BLOCK);
        assertKind(Kind.EXHAUSTED, () -> pool.volumes().create(empty));
        assertThat(pool.volumes().imagePath(Ids.volumeIdFor("empty"))).doesNotExist();
        assertThat(pool.volumes().list()).isEmpty();
    }

    @Test
    void preallocatingASparseVolumeThePoolCannotHoldIsNoSpaceAndLeavesItSparse() {
        Volume volume = pool.volumes().create(VolumeSpecs.of("thin", 48 * MIB, Allocation.SPARSE, AccessType.BLOCK));
        Volume filler =
                pool.volumes().create(VolumeSpecs.of("filler", 24 * MIB, Allocation.PREALLOCATED, AccessType.BLOCK));

        assertKind(Kind.EXHAUSTED, () -> pool.volumes().changeAllocation(volume, Allocation.PREALLOCATED));
        assertThat(pool.volumes().get(volume.id()).allocation()).isEqualTo(Allocation.SPARSE);

        pool.volumes().delete(filler.id());
        Volume reserved = pool.volumes().changeAllocation(pool.volumes().get(volume.id()), Allocation.PREALLOCATED);
        assertThat(reserved.allocation()).isEqualTo(Allocation.PREALLOCATED);
        assertThat(pool.volumes().get(volume.id()).allocation()).isEqualTo(Allocation.PREALLOCATED);
        assertThat(allocatedBytes(pool.volumes().imagePath(volume.id()))).isGreaterThanOrEqualTo(48 * MIB);
    }

    @Test
    void aFullPoolIsEverySparseVolumesProblemAndAReadOnlyOneEveryVolumes() throws IOException {
        Volume sparse = pool.volumes().create(VolumeSpecs.of("sparse", 4 * MIB, Allocation.SPARSE, AccessType.BLOCK));
        Volume reserved =
                pool.volumes().create(VolumeSpecs.of("reserved", 4 * MIB, Allocation.PREALLOCATED, AccessType.BLOCK));
        assertThat(pool.health().pool()).isEmpty();

        fill(mountPoint.resolve("filler"));
        assertThat(pool.health().pool()).extracting(HealthProblem::reason).containsExactly("PoolFull");
        assertThat(pool.health().volume(sparse.id()).problems())
                .extracting(HealthProblem::reason)
                .containsExactly("PoolFull");
        assertThat(pool.health().volume(reserved.id()).problems()).isEmpty();
        assertThat(pool.health().page(0, 0).entries())
                .extracting(PoolHealth.VolumeHealth::volumeId)
                .containsExactly(sparse.id());

        Files.delete(mountPoint.resolve("filler"));
        commands.runChecked("mount", "-o", "remount,ro", mountPoint.toString());
        assertThat(pool.health().pool()).extracting(HealthProblem::reason).containsExactly("PoolReadOnly");
        assertThat(pool.health().volume(reserved.id()).problems())
                .extracting(HealthProblem::reason)
                .containsExactly("PoolReadOnly");
    }

    private long allocatedBytes(Path file) {
        // st_blocks counts 512-byte units
        return Long.parseLong(commands.runChecked("stat", "-c", "%b", file.toString())
                        .stdout()
                        .strip())
                * 512;
    }

    /** Writes {@code file} until the filesystem has no block left. */
    private static void fill(Path file) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            for (int chunk = (int) MIB; chunk >= 1024; chunk /= 4) {
                ByteBuffer buffer = ByteBuffer.allocate(chunk);
                try {
                    while (true) {
                        buffer.clear();
                        channel.write(buffer);
                        channel.force(false);
                    }
                } catch (IOException full) {
                    // ENOSPC at this chunk size; try a smaller one
                }
            }
        }
    }

    private static void assertKind(Kind kind, Runnable call) {
        assertThatThrownBy(call::run)
                .isInstanceOfSatisfying(
                        StorageException.class,
                        e -> assertThat(e.kind()).as(e.getMessage()).isEqualTo(kind));
    }
}
