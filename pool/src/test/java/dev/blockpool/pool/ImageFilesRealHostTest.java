package dev.blockpool.pool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.CommandRunner;
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
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Snapshot copies on real pool filesystems, each made in the test on a loop device: XFS with
 * reflink shares extents (FICLONE, without running any host tool), ext4 falls back to a
 * sparse-aware copy that keeps holes. Needs root; skipped otherwise.
 */
@NeedsRoot
class ImageFilesRealHostTest {

    private static final long MIB = 1 << 20;
    private static final long GIB = 1 << 30;

    private final CommandRunner real = new ProcessCommandRunner();
    /** Every host command the pool ran: a reflink runs none, the sparse copy runs {@code cp}. */
    private final List<List<String>> ran = new CopyOnWriteArrayList<>();

    private final CommandRunner commands = (timeout, command) -> {
        ran.add(command);
        return real.run(timeout, command);
    };

    @TempDir
    Path work;

    @RegisterExtension
    final ScratchFilesystems filesystems = new ScratchFilesystems();

    @Test
    void xfsWithReflinkSharesExtentsInsteadOfCopying() throws IOException {
        Pool pool = open(filesystems
                .make(work, 600 * MIB, "mkfs.xfs", "-q", "-f", "-m", "reflink=1")
                .resolve("pool"));

        Path plain = pool.root().resolve("plain.img");
        writeRandom(plain, 0, 8 * MIB, 1);
        Path copy = pool.root().resolve("plain-copy.img");
        Files.write(copy, new byte[] {9, 9, 9}); // an earlier attempt's leftover is replaced
        assertThat(new ImageFiles(commands).copy(plain, copy)).isEqualTo(ImageFiles.CopyMethod.REFLINK);
        assertThat(Files.mismatch(plain, copy)).isEqualTo(-1);

        // FICLONE cannot share extents across filesystems (EXDEV): the sparse copy takes over
        Path outside = work.resolve("outside.img");
        writeRandom(outside, MIB, MIB, 7);
        Path fromOutside = pool.root().resolve("from-outside.img");
        assertThat(new ImageFiles(commands).copy(outside, fromOutside)).isEqualTo(ImageFiles.CopyMethod.SPARSE_COPY);
        assertThat(Files.mismatch(outside, fromOutside)).isEqualTo(-1);
        ran.clear();

        Volume volume = pool.volumes().create(VolumeSpecs.sparse("xfs-vol", 256 * MIB));
        Path image = pool.volumes().imagePath(volume.id());
        writeRandom(image, 64 * MIB, 100 * MIB, 2);
        long freeBefore = pool.space().availableBytes();

        Snapshot snapshot = pool.snapshots().create("xfs-snap", volume, image);

        assertThat(ran).as("host commands a reflinked volume and snapshot ran").isEmpty();
        long used = freeBefore - pool.space().availableBytes();
        assertThat(used).as("bytes the 100 MiB snapshot took from the pool").isLessThan(4 * MIB);
        Path snapshotImage = pool.snapshots().imagePath(snapshot.id());
        assertThat(Files.mismatch(image, snapshotImage)).isEqualTo(-1);

        // copy-on-write: writing the volume afterwards leaves the snapshot as it was
        byte[] before = read(snapshotImage, 64 * MIB, MIB);
        writeRandom(image, 64 * MIB, MIB, 3);
        assertThat(read(snapshotImage, 64 * MIB, MIB)).isEqualTo(before);
        assertThat(read(image, 64 * MIB, MIB)).isNotEqualTo(before);
    }

    @Test
    void ext4TakesTheSparseCopyPathAndA1GibSnapshotStaysSparse() throws IOException {
        Pool pool =
                // over-committed: its sparse volumes are larger than the filesystem, to see what they hold
                open(
                        filesystems.make(work, 3 * GIB, "mkfs.ext4", "-q", "-F").resolve("pool"),
                        CapacityPolicy.overcommitted(4.0));

        Path plain = pool.root().resolve("plain.img");
        writeRandom(plain, 0, 8 * MIB, 1);
        assertThat(new ImageFiles(commands).copy(plain, pool.root().resolve("plain-copy.img")))
                .isEqualTo(ImageFiles.CopyMethod.SPARSE_COPY);
        assertThat(ran).extracting(List::getFirst).containsExactly("cp");
        assertThat(Files.mismatch(plain, pool.root().resolve("plain-copy.img"))).isEqualTo(-1);

        Volume volume = pool.volumes().create(VolumeSpecs.sparse("sparse-1g", GIB));
        Path image = pool.volumes().imagePath(volume.id());
        assertThat(allocatedBytes(image)).as("a new sparse volume").isLessThan(MIB);
        writeRandom(image, 0, 2 * MIB, 4);
        writeRandom(image, 700 * MIB, 2 * MIB, 5);
        long freeBefore = pool.space().availableBytes();

        Snapshot snapshot = pool.snapshots().create("sparse-1g-snap", volume, image);

        Path snapshotImage = pool.snapshots().imagePath(snapshot.id());
        assertThat(snapshotImage).hasSize(GIB);
        assertThat(allocatedBytes(snapshotImage))
                .as("blocks the 1 GiB snapshot allocates")
                .isBetween(4 * MIB, 8 * MIB);
        assertThat(freeBefore - pool.space().availableBytes())
                .as("bytes the snapshot took from the pool")
                .isLessThan(16 * MIB);
        assertThat(Files.mismatch(image, snapshotImage)).isEqualTo(-1);

        Volume restored = pool.volumes()
                .create(new VolumeSpec(
                        "restored",
                        2 * GIB,
                        "ext4",
                        Allocation.SPARSE,
                        Set.of(AccessType.MOUNT),
                        Map.of(),
                        Optional.of(ContentSource.snapshot(snapshot.id()))));
        Path restoredImage = pool.volumes().imagePath(restored.id());
        assertThat(restoredImage).hasSize(2 * GIB);
        assertThat(allocatedBytes(restoredImage))
                .as("blocks the 2 GiB restore allocates")
                .isLessThan(8 * MIB);
        assertThat(read(restoredImage, 700 * MIB, 2 * MIB)).isEqualTo(read(image, 700 * MIB, 2 * MIB));
        assertThat(read(restoredImage, GIB, MIB))
                .as("the grown tail reads as zeros")
                .isEqualTo(new byte[(int) MIB]);
    }

    @Test
    void preallocatedVolumesOwnTheirBlocksUpFront() throws IOException {
        Pool pool = open(filesystems.make(work, GIB, "mkfs.ext4", "-q", "-F").resolve("pool"));

        Volume volume =
                pool.volumes().create(VolumeSpecs.of("prealloc", 64 * MIB, Allocation.PREALLOCATED, AccessType.BLOCK));
        Path image = pool.volumes().imagePath(volume.id());
        assertThat(image).hasSize(64 * MIB);
        assertThat(allocatedBytes(image)).isGreaterThanOrEqualTo(64 * MIB);

        pool.volumes().expand(volume.id(), 96 * MIB);
        assertThat(image).hasSize(96 * MIB);
        assertThat(allocatedBytes(image))
                .as("the grown part is preallocated too")
                .isGreaterThanOrEqualTo(96 * MIB);

        // restored or cloned from a sparse source, a preallocated volume still owns all its blocks
        Volume sparse = pool.volumes().create(VolumeSpecs.sparse("sparse-source", 64 * MIB));
        writeRandom(pool.volumes().imagePath(sparse.id()), 8 * MIB, MIB, 6);
        Snapshot snapshot =
                pool.snapshots().create("sparse-snap", sparse, pool.volumes().imagePath(sparse.id()));
        for (ContentSource source : List.of(ContentSource.snapshot(snapshot.id()), ContentSource.volume(sparse.id()))) {
            Volume copy = pool.volumes()
                    .create(new VolumeSpec(
                            "prealloc-from-" + source.kind(),
                            64 * MIB,
                            "ext4",
                            Allocation.PREALLOCATED,
                            Set.of(AccessType.BLOCK),
                            Map.of(),
                            Optional.of(source)));
            Path copyImage = pool.volumes().imagePath(copy.id());
            assertThat(allocatedBytes(copyImage))
                    .as("preallocated volume from %s", source.kind())
                    .isGreaterThanOrEqualTo(64 * MIB);
            assertThat(read(copyImage, 8 * MIB, MIB))
                    .isEqualTo(read(pool.volumes().imagePath(sparse.id()), 8 * MIB, MIB));
        }

        // what the filesystem can never hold is out of range; what it cannot hold now exhausts the pool
        long total = pool.space().totalBytes();
        long available = pool.space().availableBytes();
        assertThat(available).isLessThan(total - 128 * MIB);
        assertKind(Kind.OUT_OF_RANGE, () -> pool.volumes().create(VolumeSpecs.sparse("too-big", total + MIB)));
        assertKind(
                Kind.EXHAUSTED,
                () -> pool.volumes().create(VolumeSpecs.sparse("no-room", (available + total) / 2 / MIB * MIB)));
        assertKind(Kind.EXHAUSTED, () -> pool.volumes().expand(volume.id(), available + 128 * MIB));
        assertThat(pool.volumes().list()).extracting(Volume::name).doesNotContain("too-big", "no-room");
    }

    private static void assertKind(Kind kind, Runnable call) {
        assertThatThrownBy(call::run)
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(kind));
    }

    private Pool open(Path root) {
        return open(root, CapacityPolicy.DEFAULT);
    }

    private Pool open(Path root, CapacityPolicy policy) {
        return Pool.open(root, commands, Clock.systemUTC(), Duration.ZERO, new BlockingCalls(), policy);
    }

    /** Bytes of disk the file really occupies, from {@code stat}'s count of 512-byte blocks. */
    private long allocatedBytes(Path file) {
        return Long.parseLong(real.runChecked("stat", "-c", "%b", file.toString())
                        .stdout()
                        .strip())
                * 512;
    }

    private static void writeRandom(Path file, long offset, long length, long seed) throws IOException {
        byte[] data = new byte[(int) length];
        new Random(seed).nextBytes(data);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            ByteBuffer buffer = ByteBuffer.wrap(data);
            while (buffer.hasRemaining()) {
                channel.write(buffer, offset + buffer.position());
            }
            channel.force(true);
        }
    }

    private static byte[] read(Path file, long offset, long length) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate((int) length);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            while (buffer.hasRemaining() && channel.read(buffer, offset + buffer.position()) >= 0) {
                // keep reading
            }
        }
        return buffer.array();
    }
}
