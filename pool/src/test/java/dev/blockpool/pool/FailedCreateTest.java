package dev.blockpool.pool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.common.StorageException;
import dev.blockpool.common.StorageException.Kind;
import dev.blockpool.pool.records.DurableFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A create that fails part-way (its image step or its record's write) leaves nothing behind, so
 * the pool does not fill up with orphans and a retry of the same name starts clean.
 */
class FailedCreateTest {

    private static final long MIB = 1 << 20;

    @TempDir
    Path root;

    private final CommandRunner real = new ProcessCommandRunner();
    /** The host tool that fails as it does on a full pool; none while null. */
    private volatile String fullFor;

    private volatile String fullReason = "No space left on device";
    private final CommandRunner commands = (timeout, command) ->
            command.getFirst().equals(fullFor) ? failHalfWay(command) : real.run(timeout, command);

    private Pool pool;

    @BeforeEach
    void setUp() {
        pool = Pool.open(root, commands, Clock.systemUTC(), Duration.ZERO);
    }

    @Test
    void aPreallocationThatRunsOutOfSpaceLeavesNoImageAndTheRetrySucceeds() throws IOException {
        fullFor = "fallocate";
        VolumeSpec spec = VolumeSpecs.of("prealloc", 4 * MIB, Allocation.PREALLOCATED, AccessType.BLOCK);
        assertKind(Kind.EXHAUSTED, () -> pool.volumes().create(spec));
        assertThat(files("volumes")).isEmpty();

        fullFor = null;
        Volume volume = pool.volumes().create(spec);
        assertThat(pool.volumes().imagePath(volume.id())).hasSize(4 * MIB);
        assertThat(pool.volumes().list()).containsExactly(volume);
    }

    @Test
    void aCopyThatFailsLeavesNoSnapshotOrCloneImageAndTheSourceIntact() throws IOException {
        Volume source = pool.volumes().create(VolumeSpecs.sparse("source", MIB));
        Path sourceImage = pool.volumes().imagePath(source.id());
        Files.write(sourceImage, new byte[] {1, 2, 3}, StandardOpenOption.WRITE);

        fullFor = "cp";
        fullReason = "Disk quota exceeded";
        assertKind(Kind.EXHAUSTED, () -> pool.snapshots().create("snap", source, sourceImage));
        assertKind(
                Kind.EXHAUSTED,
                () -> pool.volumes()
                        .create(new VolumeSpec(
                                "clone",
                                MIB,
                                "ext4",
                                Allocation.SPARSE,
                                Set.of(AccessType.MOUNT),
                                Map.of(),
                                Optional.of(ContentSource.volume(source.id())))));

        assertThat(files("snapshots")).isEmpty();
        assertThat(files("volumes")).containsExactlyInAnyOrder(source.id() + ".img", source.id() + ".json");
        assertThat(Files.readAllBytes(sourceImage)).startsWith(1, 2, 3).hasSize((int) MIB);

        fullFor = null;
        Snapshot snapshot = pool.snapshots().create("snap", source, sourceImage);
        assertThat(Files.mismatch(sourceImage, pool.snapshots().imagePath(snapshot.id())))
                .isEqualTo(-1);
    }

    @Test
    void aFailedMetadataWriteLeavesNoImageAndTheRetrySucceeds() throws IOException {
        // A directory where the metadata's temporary file goes makes that write fail, after the image is made.
        Path metadata = root.resolve("volumes").resolve(Ids.volumeIdFor("meta") + ".json");
        Files.createDirectory(DurableFiles.tempPath(metadata));

        assertThatThrownBy(() -> pool.volumes().create(VolumeSpecs.sparse("meta", MIB)))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.getMessage()).startsWith("cannot write " + metadata));
        assertThat(files("volumes")).isEmpty();

        Volume volume = pool.volumes().create(VolumeSpecs.sparse("meta", MIB));
        assertThat(pool.volumes().imagePath(volume.id())).hasSize(MIB);
        assertThat(files("volumes")).containsExactlyInAnyOrder(volume.id() + ".img", volume.id() + ".json");
    }

    @Test
    void aRefusedCreateUnderAnExistingNameLeavesThatRecordsImageAlone() throws IOException {
        Volume volume = pool.volumes().create(VolumeSpecs.sparse("taken", MIB));
        Path image = pool.volumes().imagePath(volume.id());
        Files.write(image, new byte[] {7, 7, 7}, StandardOpenOption.WRITE);
        Snapshot snapshot = pool.snapshots().create("taken-snap", volume, image);
        Volume other = pool.volumes().create(VolumeSpecs.sparse("other", MIB));

        fullFor = "cp";
        assertKind(Kind.CONFLICT, () -> pool.volumes().create(VolumeSpecs.sparse("taken", 2 * MIB)));
        assertKind(
                Kind.CONFLICT,
                () -> pool.snapshots()
                        .create("taken-snap", other, pool.volumes().imagePath(other.id())));

        assertThat(Files.readAllBytes(image)).startsWith(7, 7, 7).hasSize((int) MIB);
        assertThat(Files.readAllBytes(pool.snapshots().imagePath(snapshot.id())))
                .startsWith(7, 7, 7);
        assertThat(pool.volumes().find(volume.id())).contains(volume);
        assertThat(pool.snapshots().find(snapshot.id())).contains(snapshot);
    }

    @Test
    void aRetryReplacesTheImageAnInterruptedCreateLeft() throws IOException {
        String id = Ids.volumeIdFor("crashed");
        Path leftover = root.resolve("volumes").resolve(id + ".img");
        Files.write(leftover, new byte[] {9, 9, 9});

        Volume volume = pool.volumes().create(VolumeSpecs.sparse("crashed", MIB));

        assertThat(volume.id()).isEqualTo(id);
        assertThat(Files.readAllBytes(leftover)).as("a new, empty image").isEqualTo(new byte[(int) MIB]);
    }

    /** Like cp or fallocate on a full pool: the target file is there, partly written, and the tool fails. */
    private CommandRunner.Result failHalfWay(List<String> command) {
        try {
            Files.write(Path.of(command.getLast()), new byte[] {1, 2});
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        return new CommandRunner.Result(command, 1, "", command.getFirst() + ": " + fullReason);
    }

    private static void assertKind(Kind kind, Runnable call) {
        assertThatThrownBy(call::run)
                .isInstanceOfSatisfying(
                        StorageException.class,
                        e -> assertThat(e.kind()).as(e.getMessage()).isEqualTo(kind));
    }

    /** The names of the files in one pool directory. */
    private List<String> files(String dir) throws IOException {
        try (Stream<Path> files = Files.list(root.resolve(dir))) {
            return files.map(p -> p.getFileName().toString()).toList();
        }
    }
}
