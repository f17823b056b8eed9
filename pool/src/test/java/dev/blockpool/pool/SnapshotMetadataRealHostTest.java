package dev.blockpool.pool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.HostRequirements;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.common.StorageException;
import dev.blockpool.common.StorageException.Kind;
import dev.blockpool.pool.extents.ByteRange;
import dev.blockpool.pool.extents.SnapshotRanges;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Changed block tracking proved against the data, on the filesystems a pool lives on: known
 * blocks are written at known offsets, the volume is snapshotted, changed, snapshotted again, and
 * the ranges reported must cover every byte that differs and reach no further than the blocks
 * that were written. On XFS with reflinks the delta comes from the shared extents alone; on ext4,
 * which shares none, from comparing the data ranges.
 */
@NeedsRoot
class SnapshotMetadataRealHostTest {

    private static final long MIB = 1 << 20;
    private static final int BLOCK = 4096;
    private static final long SIZE = 64 * MIB;
    /** The volume grows between the snapshots: the base reads as zeros beyond its size. */
    private static final long GROWN = 80 * MIB;

    private final CommandRunner commands = new ProcessCommandRunner();

    @TempDir
    Path work;

    @RegisterExtension
    final ScratchFilesystems filesystems = new ScratchFilesystems();
    /** Blocks written (or discarded) since the volume was created, and since the first snapshot. */
    private final BitSet everWritten = new BitSet();

    private final BitSet touched = new BitSet();

    @BeforeEach
    void requireFallocate() {
        HostRequirements.assumeCommand("fallocate");
    }

    @Test
    void xfsWithReflinksAnswersFromSharedExtents() throws IOException {
        BitSet reported = exercise(filesystems.make(work, 600 * MIB, "mkfs.xfs", "-q", "-f", "-m", "reflink=1"));
        assertSameBlocks(
                reported, touched, "with shared extents, every written block (a rewrite of the same bytes too)");
    }

    @Test
    void ext4WithoutReflinksComparesTheDataRanges() throws IOException {
        BitSet reported = exercise(filesystems.make(work, 600 * MIB, "mkfs.ext4", "-q", "-F"));
        assertThat(minus(touched, reported).cardinality())
                .as("the block rewritten with the same bytes is compared and left out")
                .isEqualTo(1);
    }

    @Test
    void aFilesystemThatMapsNoExtentsComparesTheDataRanges() throws IOException {
        BitSet reported = exercise(filesystems.tmpfs(work, 400 * MIB));
        assertThat(minus(touched, reported).cardinality())
                .as("the block rewritten with the same bytes is compared and left out")
                .isEqualTo(1);
    }

    /** Snapshot, change, snapshot again: checks Allocated and Delta; the blocks the delta reported. */
    private BitSet exercise(Path filesystem) throws IOException {
        Pool pool = Pool.open(filesystem.resolve("pool"), commands, Clock.systemUTC(), Duration.ZERO);
        Volume volume = pool.volumes().create(VolumeSpecs.of("cbt", SIZE, Allocation.SPARSE, AccessType.BLOCK));
        Path image = pool.volumes().imagePath(volume.id());
        Random random = new Random(1);

        write(image, 0, 8 * MIB, random);
        write(image, 20 * MIB, 4 * MIB, random);
        for (int i = 0; i < 32; i++) {
            write(image, 32 * MIB + random.nextInt((int) (32 * MIB / BLOCK)) * (long) BLOCK, BLOCK, random);
        }
        Snapshot base = pool.snapshots().create("base", volume, image);
        Path baseImage = pool.snapshots().imagePath(base.id());
        assertSameBlocks(
                blocksOf(all(pool.snapshotMetadata().allocated(base.id(), 0), 0)),
                everWritten,
                "allocated in the base");

        touched.clear();
        pool.volumes().expand(volume.id(), GROWN);
        write(image, 72 * MIB, BLOCK, random); // in the grown part
        for (int i = 0; i < 16; i++) { // scattered single blocks, in data and in holes
            write(image, random.nextInt((int) (SIZE / BLOCK)) * (long) BLOCK, BLOCK, random);
        }
        write(image, 8 * MIB - 10 * 1024, 24 * 1024, random); // unaligned, across the end of an extent
        byte[] same = read(image, 20 * MIB + BLOCK, BLOCK); // the same bytes written again
        try (FileChannel channel = FileChannel.open(image, StandardOpenOption.WRITE)) {
            channel.write(ByteBuffer.wrap(same), 20 * MIB + BLOCK);
            channel.force(true);
        }
        mark(20 * MIB + BLOCK, BLOCK);
        commands.runChecked(
                "fallocate", "--punch-hole", "--offset", Long.toString(2 * MIB), "--length", "65536", image.toString());
        mark(2 * MIB, 65536); // a discard
        everWritten.clear((int) (2 * MIB / BLOCK), (int) ((2 * MIB + 65536) / BLOCK));
        Snapshot target = pool.snapshots().create("target", pool.volumes().get(volume.id()), image);
        Path targetImage = pool.snapshots().imagePath(target.id());

        BitSet allocated = blocksOf(all(pool.snapshotMetadata().allocated(target.id(), 0), 0));
        assertSameBlocks(allocated, everWritten, "allocated in the target");

        List<ByteRange> delta = all(pool.snapshotMetadata().delta(base.id(), target.id(), 0), 0);
        BitSet reported = blocksOf(delta);
        BitSet differing = differingBlocks(baseImage, targetImage);
        assertThat(differing.cardinality()).isGreaterThan(16);
        assertThat(minus(differing, reported))
                .as("blocks that differ but were not reported")
                .isEqualTo(new BitSet());
        assertThat(minus(reported, touched))
                .as("blocks reported that were never written")
                .isEqualTo(new BitSet());

        // paging and resuming give the same ranges
        assertThat(all(pool.snapshotMetadata().delta(base.id(), target.id(), 0), 1))
                .isEqualTo(delta);
        ByteRange middle = delta.get(delta.size() / 2);
        long resumeAt = middle.offset() + 1000;
        List<ByteRange> resumed = all(pool.snapshotMetadata().delta(base.id(), target.id(), resumeAt), 3);
        assertThat(resumed.getFirst().offset()).isGreaterThanOrEqualTo(resumeAt);
        assertThat(resumed.getFirst().end()).isEqualTo(middle.end());
        assertThat(resumed.subList(1, resumed.size())).isEqualTo(delta.subList(delta.size() / 2 + 1, delta.size()));

        assertThat(all(pool.snapshotMetadata().delta(target.id(), target.id(), 0), 0))
                .isEmpty();
        assertThatThrownBy(() -> pool.snapshotMetadata().delta(target.id(), base.id(), 0))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(Kind.INVALID));
        assertThat(pool.snapshotMetadata().delta(base.id(), target.id(), 0).capacityBytes())
                .isEqualTo(GROWN);
        assertThatThrownBy(() -> pool.snapshotMetadata().allocated(base.id(), SIZE + 1))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(Kind.OUT_OF_RANGE));
        return reported;
    }

    /** Every range of {@code ranges}, {@code max} at a time (0: all), checked to be in order and apart. */
    static List<ByteRange> all(SnapshotRanges ranges, int max) {
        try (ranges) {
            List<ByteRange> all = new ArrayList<>();
            for (List<ByteRange> next = ranges.next(max == 0 ? Integer.MAX_VALUE : max, () -> false);
                    !next.isEmpty();
                    next = ranges.next(max == 0 ? Integer.MAX_VALUE : max, () -> false)) {
                for (ByteRange range : next) {
                    if (!all.isEmpty()) {
                        assertThat(range.offset())
                                .as("after %s", all.getLast())
                                .isGreaterThan(all.getLast().end());
                    }
                    all.add(range);
                }
            }
            return all;
        }
    }

    /** Asserts that {@code actual} holds the blocks of {@code expected}, naming those missing and those too many. */
    private static void assertSameBlocks(BitSet actual, BitSet expected, String what) {
        assertThat(minus(expected, actual)).as("%s: missing", what).isEqualTo(new BitSet());
        assertThat(minus(actual, expected)).as("%s: too many", what).isEqualTo(new BitSet());
    }

    private static BitSet minus(BitSet blocks, BitSet without) {
        BitSet rest = (BitSet) blocks.clone();
        rest.andNot(without);
        return rest;
    }

    /** The 4 KiB blocks the ranges reach into. */
    private static BitSet blocksOf(List<ByteRange> ranges) {
        BitSet blocks = new BitSet();
        ranges.forEach(range -> blocks.set((int) (range.offset() / BLOCK), (int) ((range.end() + BLOCK - 1) / BLOCK)));
        return blocks;
    }

    private void mark(long offset, long length) {
        touched.set((int) (offset / BLOCK), (int) ((offset + length + BLOCK - 1) / BLOCK));
        everWritten.set((int) (offset / BLOCK), (int) ((offset + length + BLOCK - 1) / BLOCK));
    }

    private void write(Path image, long offset, long length, Random random) throws IOException {
        byte[] data = new byte[(int) length];
        random.nextBytes(data);
        try (FileChannel channel = FileChannel.open(image, StandardOpenOption.WRITE)) {
            ByteBuffer buffer = ByteBuffer.wrap(data);
            while (buffer.hasRemaining()) {
                channel.write(buffer, offset + buffer.position());
            }
            channel.force(true);
        }
        mark(offset, length);
    }

    private static byte[] read(Path file, long offset, int length) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(length);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            while (buffer.hasRemaining() && channel.read(buffer, offset + buffer.position()) >= 0) {
                // keep reading
            }
        }
        return buffer.array();
    }

    private static BitSet differingBlocks(Path base, Path target) throws IOException {
        byte[] after = Files.readAllBytes(target);
        byte[] before = java.util.Arrays.copyOf(Files.readAllBytes(base), after.length); // zeros beyond its size
        BitSet blocks = new BitSet();
        for (int block = 0; block < after.length / BLOCK; block++) {
            int from = block * BLOCK;
            if (java.util.Arrays.mismatch(before, from, from + BLOCK, after, from, from + BLOCK) >= 0) {
                blocks.set(block);
            }
        }
        return blocks;
    }
}
