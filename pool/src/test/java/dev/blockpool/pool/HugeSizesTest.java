package dev.blockpool.pool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.common.StorageException;
import dev.blockpool.common.StorageException.Kind;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Sizes up to 2^63 - 1 are refused as out of range, never wrapped around into a size that fits. */
class HugeSizesTest {

    @TempDir
    Path root;

    private Pool pool;

    @BeforeEach
    void setUp() {
        pool = Pool.open(root, new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO);
    }

    @ParameterizedTest
    @ValueSource(longs = {Long.MAX_VALUE, Long.MAX_VALUE - 1, Long.MAX_VALUE - (1 << 20), 1L << 62})
    void volumesBeyondThePoolAreOutOfRange(long bytes) throws IOException {
        Volume small = pool.volumes().create(spec("small", 1 << 20, Optional.empty()));
        Snapshot snapshot =
                pool.snapshots().create("snap", small, pool.volumes().imagePath(small.id()));

        assertKind(Kind.OUT_OF_RANGE, () -> pool.volumes().create(spec("huge", bytes, Optional.empty())));
        assertKind(
                Kind.OUT_OF_RANGE,
                () -> pool.volumes()
                        .create(spec("huge-restore", bytes, Optional.of(ContentSource.snapshot(snapshot.id())))));
        assertKind(
                Kind.OUT_OF_RANGE,
                () -> pool.volumes().create(spec("huge-clone", bytes, Optional.of(ContentSource.volume(small.id())))));
        assertKind(Kind.OUT_OF_RANGE, () -> pool.volumes().expand(small.id(), bytes));

        assertThat(pool.volumes().list()).containsExactly(small);
        assertThat(pool.volumes().imagePath(small.id())).hasSize(1 << 20);
        try (Stream<Path> files = Files.list(root.resolve("volumes"))) {
            assertThat(files).hasSize(2);
        }
    }

    @Test
    void aNegativeSizeIsInvalid() {
        assertKind(Kind.INVALID, () -> pool.volumes().create(spec("negative", -1, Optional.empty())));
        assertKind(Kind.INVALID, () -> pool.volumes().create(spec("very-negative", Long.MIN_VALUE, Optional.empty())));
        assertThat(pool.volumes().list()).isEmpty();
    }

    private static VolumeSpec spec(String name, long bytes, Optional<ContentSource> source) {
        return new VolumeSpec(name, bytes, "ext4", Allocation.SPARSE, Set.of(AccessType.MOUNT), Map.of(), source);
    }

    private static void assertKind(Kind kind, Runnable call) {
        assertThatThrownBy(call::run)
                .isInstanceOfSatisfying(
                        StorageException.class,
                        e -> assertThat(e.kind()).as(e.getMessage()).isEqualTo(kind));
    }
}
