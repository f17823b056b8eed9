package dev.blockpool.pool;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.pool.extents.ByteRange;
import dev.blockpool.pool.extents.ImageExtents;
import dev.blockpool.pool.transfer.ImageImports;
import dev.blockpool.pool.transfer.ImageReader;
import dev.blockpool.pool.transfer.LoopbackImage;
import dev.blockpool.pool.transfer.PoolImageExports;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A volume exported from a pool on XFS with reflinks: its frozen copy shares the volume's extents
 * (no data copied), a later round's ranges come from the extents the volume no longer shares, and
 * the pull of it into another pool holds its bytes.
 */
@NeedsRoot
class TransferRealHostTest {

    private static final long MIB = 1 << 20;

    @TempDir
    Path work;

    @RegisterExtension
    final ScratchFilesystems filesystems = new ScratchFilesystems();

    @Test
    void aVolumeFrozenOnXfsIsAReflinkAndItsNextRoundSendsOnlyWhatItRewrote() throws IOException {
        Path xfs = filesystems.make(work, 600 * MIB, "mkfs.xfs", "-q", "-f", "-m", "reflink=1");
        Pool source = open(xfs.resolve("a"));
        Pool destination = open(xfs.resolve("b"));
        Volume volume = source.volumes()
                .create(new VolumeSpec(
                        "pvc-on-xfs",
                        64 * MIB,
                        "xfs",
                        Allocation.SPARSE,
                        Set.of(AccessType.MOUNT),
                        Map.of(),
                        Optional.empty()));
        Path image = source.volumes().imagePath(volume.id());
        write(image, 0, 2 * MIB, 1);
        write(image, 40 * MIB, MIB, 2);
        PoolImageExports exports = new PoolImageExports(source, Clock.systemUTC());
        ContentSource fromVolume = ContentSource.volume(volume.id());
        String target = Ids.volumeIdFor("pvc-pulled");

        ImageReader first = exports.open(fromVolume, target, Optional.empty());
        Path copy = source.root().resolve("outgoing").resolve(target + ".1.img");
        try (ImageExtents extents = ImageExtents.open(copy, "the frozen copy")) {
            assertThat(extents.sharedBytes(64 * MIB, 1024)).as("a reflink").isEqualTo(3 * MIB);
        }
        LoopbackImage remote = new LoopbackImage("node-a", first);
        ImageImports imports = new ImageImports(destination);
        imports.pull(target, fromVolume, remote, (done, size) -> {});
        assertThat(remote.bytesRead.get()).isEqualTo(3 * MIB);
        assertThat(Files.mismatch(destination.root().resolve("incoming").resolve(target + ".img"), copy))
                .isEqualTo(-1);

        write(image, 40 * MIB, MIB, 3);
        ImageReader second = exports.open(fromVolume, target, Optional.of(first.identity()));

        assertThat(second.ranges(0, 100)).containsExactly(new ByteRange(40 * MIB, MIB));
    }

    private static Pool open(Path root) {
        return Pool.open(root, new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO, new BlockingCalls());
    }

    private static void write(Path image, long offset, long length, int value) throws IOException {
        byte[] data = new byte[(int) length];
        Arrays.fill(data, (byte) value);
        try (RandomAccessFile file = new RandomAccessFile(image.toFile(), "rw")) {
            file.seek(offset);
            file.write(data);
            file.getFD().sync();
        }
    }
}
