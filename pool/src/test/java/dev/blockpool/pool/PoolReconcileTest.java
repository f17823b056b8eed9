package dev.blockpool.pool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.GrowthMarker;
import dev.blockpool.common.OperationLocks;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.common.StorageException;
import dev.blockpool.pool.records.DurableFiles;
import dev.blockpool.pool.records.PoolLockFile;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The reconcile: what a crash leaves behind goes, committed volumes and snapshots stay. */
class PoolReconcileTest {

    private static final Duration SETTLE = Duration.ofMinutes(5);

    @TempDir
    Path root;

    private Pool open(Duration settleTime) {
        return Pool.open(root, new ProcessCommandRunner(), Clock.systemUTC(), settleTime);
    }

    @Test
    void openCreatesTheLayout() {
        open(Duration.ZERO);
        assertThat(root.resolve("volumes")).isDirectory();
        assertThat(root.resolve("snapshots")).isDirectory();
        assertThat(root.resolve("nodes")).isDirectory();
    }

    @Test
    void removesStaleTempFilesAndHalfCreatedImagesButKeepsCommittedOnes() throws IOException {
        Pool pool = open(Duration.ZERO);
        Volume kept = pool.volumes().create(VolumeSpecs.sparse("kept", 4 << 20));
        Snapshot keptSnapshot =
                pool.snapshots().create("kept-snap", kept, pool.volumes().imagePath(kept.id()));
        pool.nodes().register(new NodeRecord("node-1", 4, Map.of()));

        Path volumes = root.resolve("volumes");
        Path snapshots = root.resolve("snapshots");
        Path nodes = root.resolve("nodes");
        List<Path> debris = List.of(
                volumes.resolve(kept.id() + ".json.4242-17" + DurableFiles.TEMP_SUFFIX),
                volumes.resolve(Ids.volumeIdFor("half") + ".img"),
                snapshots.resolve(Ids.snapshotIdFor("half-snap") + ".img"),
                snapshots.resolve(keptSnapshot.id() + ".json.1-1" + DurableFiles.TEMP_SUFFIX),
                nodes.resolve("node-2.json.7-7" + DurableFiles.TEMP_SUFFIX),
                GrowthMarker.beside(volumes.resolve(Ids.volumeIdFor("deleted") + ".img")));
        for (Path file : debris) {
            Files.write(file, new byte[] {1, 2, 3});
            age(file);
        }
        Path foreign = volumes.resolve("README");
        Files.writeString(foreign, "not ours");
        age(foreign);
        age(volumes.resolve(kept.id() + ".img"));
        age(volumes.resolve(kept.id() + ".json"));
        Path keptMarker = Files.createFile(GrowthMarker.beside(volumes.resolve(kept.id() + ".img")));
        age(keptMarker);
        age(snapshots.resolve(keptSnapshot.id() + ".img"));

        Pool reopened = open(SETTLE);
        reopened.reconcile(new OperationLocks());

        for (Path file : debris) {
            assertThat(file).as("debris %s", file.getFileName()).doesNotExist();
        }
        assertThat(foreign).as("a file that is not the pool's").exists();
        assertThat(keptMarker)
                .as("the growth mark of a volume, for its next stage")
                .exists();
        assertThat(reopened.volumes().find(kept.id())).contains(kept);
        assertThat(reopened.volumes().imagePath(kept.id())).exists().hasSize(4 << 20);
        assertThat(reopened.snapshots().find(keptSnapshot.id())).contains(keptSnapshot);
        assertThat(reopened.snapshots().imagePath(keptSnapshot.id())).exists();
        assertThat(reopened.nodes().find("node-1")).isPresent();
        assertThat(reopened.volumes().list()).extracting(Volume::id).containsExactly(kept.id());
    }

    @Test
    void removesATemporaryFileAtOnceWhenItsWriterIsGoneButNotWhileItLives() throws IOException {
        open(Duration.ZERO);
        Path volumes = root.resolve("volumes");
        // A writer killed after flushing its temporary file: the kernel dropped its lock.
        Path abandoned = volumes.resolve(Ids.volumeIdFor("killed") + ".json.4242-17" + DurableFiles.HELD_SUFFIX);
        Files.write(abandoned, new byte[] {1, 2, 3});
        // A writer at work, in this process or another sharing the pool: it holds the lock.
        Path live = volumes.resolve(Ids.volumeIdFor("writing") + ".json.4243-18" + DurableFiles.HELD_SUFFIX);
        Files.write(live, new byte[] {1, 2, 3});
        // a writer's lock on its file: the flock DurableFiles takes
        PoolLockFile writer = PoolLockFile.tryTake(live).orElseThrow();
        try {
            open(SETTLE).reconcile(new OperationLocks());

            assertThat(abandoned).as("well within the settle time").doesNotExist();
            assertThat(live).exists();
        } finally {
            writer.close();
        }
        open(SETTLE).reconcile(new OperationLocks());
        assertThat(live).as("once its writer let go without renaming it").doesNotExist();
    }

    @Test
    void openingThePoolRemovesTheTemporaryFilesOfKilledWritersButNotOfLiveOnes() throws IOException {
        open(SETTLE);
        Path volumes = root.resolve("volumes");
        Path nodes = root.resolve("nodes");
        // Writers killed after flushing their temporary files: the kernel dropped their locks.
        Path killedVolume = volumes.resolve(Ids.volumeIdFor("killed") + ".json.4242-17" + DurableFiles.HELD_SUFFIX);
        Path killedNode = nodes.resolve("node-1.json.4242-18" + DurableFiles.HELD_SUFFIX);
        Files.write(killedVolume, new byte[] {1});
        Files.write(killedNode, new byte[] {1});
        Path live = volumes.resolve(Ids.volumeIdFor("writing") + ".json.4243-18" + DurableFiles.HELD_SUFFIX);
        Files.write(live, new byte[] {1});
        // a writer's lock on its file: the flock DurableFiles takes
        PoolLockFile writer = PoolLockFile.tryTake(live).orElseThrow();
        try {
            open(SETTLE); // no reconcile: the opening alone

            assertThat(killedVolume).doesNotExist();
            assertThat(killedNode).doesNotExist();
            assertThat(live).exists();
        } finally {
            writer.close();
        }
    }

    @Test
    void aHeldTemporaryFileIsRemovedOnlyUnderItsLockHoweverOld() throws IOException {
        open(Duration.ZERO);
        // a writer stuck on the pool longer than the settle time still holds its file
        Path live =
                root.resolve("volumes").resolve(Ids.volumeIdFor("stuck") + ".json.4243-18" + DurableFiles.HELD_SUFFIX);
        Files.write(live, new byte[] {1});
        age(live);
        // a writer's lock on its file: the flock DurableFiles takes
        PoolLockFile writer = PoolLockFile.tryTake(live).orElseThrow();
        try {
            open(SETTLE).reconcile(new OperationLocks());

            assertThat(live).exists();
        } finally {
            writer.close();
        }
    }

    @Test
    void aRecordIsWrittenWhileTheReconcileLooksAtItsTemporaryFile() throws Exception {
        Pool pool = open(Duration.ZERO);
        Volume volume = pool.volumes().create(VolumeSpecs.sparse("busy", 4 << 20));
        Path metadata = root.resolve("volumes").resolve(volume.id() + ".json");
        Path temp = DurableFiles.tempPath(metadata);
        Thread reconciles = Thread.ofPlatform().start(() -> {
            for (int i = 0; i < 2000; i++) {
                DurableFiles.removeIfAbandoned(temp);
            }
        });
        for (int i = 0; i < 200; i++) {
            DurableFiles.write(metadata, ("{\"round\":" + i + "}").getBytes(StandardCharsets.UTF_8));
            assertThat(metadata).hasContent("{\"round\":" + i + "}");
        }
        reconciles.join();
        assertThat(temp).doesNotExist();
    }

    @Test
    void leavesFilesYoungerThanTheSettleTimeToTheirWriter() throws IOException {
        open(Duration.ZERO);
        Path inProgressImage = root.resolve("volumes").resolve(Ids.volumeIdFor("being-created") + ".img");
        Path inProgressTemp = root.resolve("volumes").resolve(Ids.volumeIdFor("x") + ".json.9-9.tmp");
        Files.write(inProgressImage, new byte[10]);
        Files.write(inProgressTemp, new byte[10]);

        open(SETTLE).reconcile(new OperationLocks());
        assertThat(inProgressImage).exists();
        assertThat(inProgressTemp).exists();

        Pool pool = Pool.open(
                root, new ProcessCommandRunner(), Clock.offset(Clock.systemUTC(), SETTLE.multipliedBy(2)), SETTLE);
        pool.reconcile(new OperationLocks());
        assertThat(inProgressImage).doesNotExist();
        assertThat(inProgressTemp).doesNotExist();
        assertThat(pool.volumes().list()).isEmpty();
    }

    @Test
    void leavesTheImageOfAnOperationInProgressInThisProcess() throws IOException {
        Pool pool = open(Duration.ZERO);
        String id = Ids.volumeIdFor("being-cloned");
        Path image = root.resolve("volumes").resolve(id + ".img");
        Files.write(image, new byte[10]);
        age(image);
        OperationLocks locks = new OperationLocks();

        locks.withLock(() -> pool.reconcile(locks), id);
        assertThat(image).as("kept while its create holds the lock").exists();

        pool.reconcile(locks);
        assertThat(image).as("removed once nobody works on it").doesNotExist();
    }

    @Test
    void neverDeletesAnImageWhoseMetadataIsUnreadable() throws IOException {
        Pool pool = open(Duration.ZERO);
        Volume volume = pool.volumes().create(VolumeSpecs.sparse("damaged", 1 << 20));
        Path image = pool.volumes().imagePath(volume.id());
        Path metadata = root.resolve("volumes").resolve(volume.id() + ".json");
        // torn where the driver writes it, after the format version it writes first
        Files.writeString(metadata, "{\"formatVersion\": 1, \"id\": \"" + volume.id() + "\", \"capacityBytes\": ");
        Path snapImage = root.resolve("snapshots").resolve(Ids.snapshotIdFor("damaged") + ".img");
        Path snapMetadata = root.resolve("snapshots").resolve(Ids.snapshotIdFor("damaged") + ".json");
        Files.write(snapImage, new byte[4096]);
        Files.write(snapMetadata, new byte[0]);
        Stream.of(image, metadata, snapImage, snapMetadata).forEach(PoolReconcileTest::age);

        Pool reopened = open(Duration.ZERO);
        reopened.reconcile(new OperationLocks());

        assertThat(image).exists().hasSize(1 << 20);
        assertThat(metadata).exists();
        assertThat(snapImage).exists();
        assertThat(snapMetadata).exists();
        // a damaged record is left out of listings instead of failing them
        assertThat(reopened.volumes().list()).isEmpty();
        assertThat(reopened.snapshots().list()).isEmpty();
        // reading it alone says which file and what is wrong with it, in words rather than class names
        assertThatThrownBy(() -> reopened.volumes().get(volume.id()))
                .isInstanceOfSatisfying(
                        StorageException.class,
                        e -> assertThat(e.getMessage())
                                .contains(metadata.toString(), "not valid JSON")
                                .doesNotContain("Exception", "com.fasterxml", "dev.blockpool"));
        assertThatThrownBy(() -> reopened.snapshots().find(Ids.snapshotIdFor("damaged")))
                .isInstanceOfSatisfying(
                        StorageException.class,
                        e -> assertThat(e.getMessage()).contains(snapMetadata.toString(), "empty"));
    }

    @Test
    void aDeletedVolumeTakesItsGrowthMarkWithIt() throws IOException {
        Pool pool = open(Duration.ZERO);
        Volume volume = pool.volumes().create(VolumeSpecs.sparse("grown", 4 << 20));
        Path marker = Files.createFile(GrowthMarker.beside(pool.volumes().imagePath(volume.id())));
        pool.volumes().delete(volume.id());
        assertThat(marker).doesNotExist();
        assertThat(root.resolve("volumes")).isEmptyDirectory();
    }

    @Test
    void nameToIdIsDurableAcrossRestarts() {
        Volume first = open(Duration.ZERO).volumes().create(VolumeSpecs.sparse("pvc-restart", 2 << 20));
        Volume again = open(Duration.ZERO).volumes().create(VolumeSpecs.sparse("pvc-restart", 2 << 20));
        assertThat(again).isEqualTo(first);
        assertThat(again.id()).isEqualTo(Ids.volumeIdFor("pvc-restart"));
    }

    private static void age(Path file) {
        try {
            Files.setLastModifiedTime(file, FileTime.from(Instant.now().minus(Duration.ofHours(1))));
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
