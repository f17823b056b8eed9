package dev.blockpool.pool;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.common.ProcessCommandRunner;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Clock;
import java.time.Duration;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The bytes the census finds shared by reflinks, on the filesystems a pool lives on: a volume and
 * its snapshot share what the volume held when it was taken, until the volume is written again;
 * a filesystem without reflinks shares nothing, and one that maps no extents tells nothing.
 */
@NeedsRoot
class PoolCensusRealHostTest {

    private static final long MIB = 1 << 20;

    private final CommandRunner commands = new ProcessCommandRunner();

    @TempDir
    Path work;

    @RegisterExtension
    final ScratchFilesystems filesystems = new ScratchFilesystems();

    @Test
    void onXfsWithReflinksAVolumeAndItsSnapshotShareWhatTheVolumeHeldUntilItIsWritten() throws IOException {
        Pool pool = open(filesystems.make(work, 600 * MIB, "mkfs.xfs", "-q", "-f", "-m", "reflink=1"));
        Volume volume = pool.volumes().create(spec("shared"));
        Path image = pool.volumes().imagePath(volume.id());
        write(image, 0, 8 * MIB);
        pool.snapshots().create("taken", volume.id(), pool.volumes());

        PoolCensus.Figures taken = pool.census();
        assertThat(taken.sharingTold()).isTrue();
        assertThat(taken.volumes().sharedBytes()).isEqualTo(8 * MIB);
        assertThat(taken.snapshots().sharedBytes()).isEqualTo(8 * MIB);

        write(image, 2 * MIB, MIB); // copied on write: that MiB is the volume's own now
        PoolCensus.Figures written = pool.census();
        assertThat(written.volumes().sharedBytes()).isEqualTo(7 * MIB);
        assertThat(written.snapshots().sharedBytes()).isEqualTo(7 * MIB);
        assertThat(written.snapshots().allocatedBytes() - written.snapshots().sharedBytes())
                .as("the snapshot's own bytes: the MiB the volume no longer shares")
                .isEqualTo(MIB);
    }

    @Test
    void onExt4TheSnapshotIsACopyAndNothingIsShared() throws IOException {
        Pool pool = open(filesystems.make(work, 600 * MIB, "mkfs.ext4", "-q", "-F"));
        Volume volume = pool.volumes().create(spec("copied"));
        write(pool.volumes().imagePath(volume.id()), 0, 8 * MIB);
        pool.snapshots().create("taken", volume.id(), pool.volumes());

        PoolCensus.Figures figures = pool.census();
        assertThat(figures.sharingTold())
                .as("ext4 maps its extents: none is shared")
                .isTrue();
        assertThat(figures.volumes().sharedBytes()).isZero();
        assertThat(figures.snapshots().sharedBytes()).isZero();
        assertThat(figures.snapshots().allocatedBytes()).isGreaterThanOrEqualTo(8 * MIB);
    }

    @Test
    void aFilesystemThatMapsNoExtentsTellsNothing() throws IOException {
        Pool pool = open(filesystems.tmpfs(work, 100 * MIB));
        Volume volume = pool.volumes().create(spec("unmapped"));
        write(pool.volumes().imagePath(volume.id()), 0, MIB);
        pool.snapshots().create("taken", volume.id(), pool.volumes());

        PoolCensus.Figures figures = pool.census();
        assertThat(figures.sharingTold()).isFalse();
        assertThat(figures.volumes().allocatedBytes()).isEqualTo(MIB);
    }

    private Pool open(Path filesystem) {
        return Pool.open(filesystem.resolve("pool"), commands, Clock.systemUTC(), Duration.ZERO);
    }

    private static VolumeSpec spec(String name) {
        return VolumeSpecs.of(name, 64 * MIB, Allocation.SPARSE, AccessType.BLOCK);
    }

    /** Writes {@code length} bytes of 0x5a at {@code offset}, through to the disk. */
    private static void write(Path image, long offset, long length) throws IOException {
        byte[] bytes = new byte[(int) length];
        Arrays.fill(bytes, (byte) 0x5a);
        try (FileChannel channel = FileChannel.open(image, StandardOpenOption.WRITE)) {
            ByteBuffer buffer = ByteBuffer.wrap(bytes);
            while (buffer.hasRemaining()) {
                channel.write(buffer, offset + buffer.position());
            }
            channel.force(true);
        }
    }
}
