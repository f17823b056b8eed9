package dev.blockpool.pool;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.pool.records.DurableFiles;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the census counts: committed records only, the bytes their images promise and hold. */
class PoolCensusTest {

    private static final long MiB = 1L << 20;

    @TempDir
    Path root;

    private Pool open() {
        return Pool.open(root, new ProcessCommandRunner(), Clock.systemUTC(), Duration.ofMinutes(10));
    }

    private static VolumeSpec spec(String name, long bytes, Allocation allocation) {
        return VolumeSpecs.of(name, bytes, allocation, AccessType.MOUNT);
    }

    @Test
    void anEmptyPoolHoldsNothingOnItsFilesystem() {
        PoolCensus.Figures figures = open().census();

        assertThat(figures.volumes()).isEqualTo(new PoolCensus.Images(0, 0, 0, 0));
        assertThat(figures.snapshots()).isEqualTo(new PoolCensus.Images(0, 0, 0, 0));
        assertThat(figures.groupSnapshots()).isZero();
        assertThat(figures.sizeBytes()).isPositive();
        assertThat(figures.availableBytes()).isBetween(0L, figures.sizeBytes());
    }

    @Test
    void volumesPromiseTheirSizesAndHoldWhatIsAllocated() {
        Pool pool = open();
        pool.volumes().create(spec("thin", 8 * MiB, Allocation.SPARSE));
        pool.volumes().create(spec("thick", 4 * MiB, Allocation.PREALLOCATED));

        PoolCensus.Images volumes = pool.census().volumes();

        assertThat(volumes.count()).isEqualTo(2);
        assertThat(volumes.provisionedBytes()).isEqualTo(12 * MiB);
        // every block of the preallocated one, none (or a filesystem's metadata block or so) of the sparse one
        assertThat(volumes.allocatedBytes()).isBetween(4 * MiB, 5 * MiB);
    }

    @Test
    void whatTheCensusSaysIsPromisedIsWhatThePoolCountsTransfersIncluded() throws IOException {
        Pool pool = open();
        pool.volumes().create(spec("here", 8 * MiB, Allocation.SPARSE));
        // an image being pulled from another node: it promises its full size, with no record
        Path incoming = root.resolve("incoming").resolve("vol-0123456789abcdef0123456789abcdef.img");
        try (FileChannel file = FileChannel.open(incoming, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            file.write(ByteBuffer.allocate(1), 4 * MiB - 1);
        }

        PoolCensus.Figures figures = pool.census();

        assertThat(figures.promisedBytes()).isEqualTo(12 * MiB);
        assertThat(figures.promisedBytes()).isEqualTo(pool.capacity().read().promisedBytes());
    }

    @Test
    void snapshotsAndGroupsAreCountedAndADeleteIsGoneFromTheCount() {
        Pool pool = open();
        Volume a = pool.volumes().create(spec("a", 4 * MiB, Allocation.SPARSE));
        Volume b = pool.volumes().create(spec("b", 2 * MiB, Allocation.SPARSE));
        pool.snapshots().create("snap", a.id(), pool.volumes());
        pool.groups().create("group", List.of(a.id(), b.id()));

        PoolCensus.Figures figures = pool.census();
        assertThat(figures.snapshots().count()).isEqualTo(3); // one alone, two in the group
        assertThat(figures.snapshots().provisionedBytes()).isEqualTo(10 * MiB);
        assertThat(figures.groupSnapshots()).isEqualTo(1);

        pool.volumes().delete(b.id());
        assertThat(pool.census().volumes())
                .extracting(PoolCensus.Images::count, PoolCensus.Images::provisionedBytes)
                .containsExactly(1L, 4 * MiB);
    }

    @Test
    void anUnfinishedCreateIsNotCounted() throws IOException {
        Pool pool = open();
        // an image whose record was never committed, and a record's temporary file
        Files.write(root.resolve("volumes/pvc-unfinished.img"), new byte[4096]);
        Files.writeString(root.resolve("volumes/pvc-unfinished.json.1-1" + DurableFiles.HELD_SUFFIX), "{}");

        assertThat(pool.census().volumes()).isEqualTo(new PoolCensus.Images(0, 0, 0, 0));
    }
}
