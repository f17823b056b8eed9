package dev.blockpool.pool;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.HealthProblem;
import dev.blockpool.common.ProcessCommandRunner;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A volume's health from the pool while an expansion grows its image. */
class PoolHealthTest {

    private static final long MiB = 1L << 20;

    @TempDir
    Path root;

    @Test
    void anImageAnExpansionGrewBeforeItsRecordIsNoProblemUntilItSettles() throws IOException {
        Pool pool = Pool.open(root, new ProcessCommandRunner(), Clock.systemUTC(), Duration.ofMinutes(10));
        Volume volume = pool.volumes().create(VolumeSpecs.sparse("grown", 4 * MiB));
        Path image = pool.volumes().imagePath(volume.id());
        try (RandomAccessFile file = new RandomAccessFile(image.toFile(), "rw")) {
            file.setLength(8 * MiB); // ControllerExpandVolume's first step; its record follows
        }
        assertThat(pool.health().volume(volume.id()).problems()).isEmpty();

        // Left so for longer than an expansion takes, or its retry comes: a problem.
        Files.setLastModifiedTime(image, FileTime.from(Instant.now().minus(Duration.ofMinutes(11))));
        assertThat(pool.health().volume(volume.id()).problems())
                .extracting(HealthProblem::reason)
                .containsExactly("ImageSizeMismatch");

        pool.volumes().expand(volume.id(), 8 * MiB); // the record catches up
        assertThat(pool.health().volume(volume.id()).problems()).isEmpty();
    }
}
