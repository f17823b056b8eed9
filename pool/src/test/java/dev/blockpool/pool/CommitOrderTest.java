package dev.blockpool.pool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.HostRequirements;
import dev.blockpool.common.StorageException;
import dev.blockpool.pool.records.DurableFiles;
import dev.blockpool.pool.records.RecordLock;
import java.io.FileInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A new record is flushed to its temporary file before its image is flushed, and renamed into
 * place only once the image's flush has returned: while the image is being flushed a crash
 * leaves no record, and a flush that fails leaves nothing at all. The image here is a FIFO,
 * whose open for the flush waits for a reader (the test), and whose fsync(2) then fails.
 */
class CommitOrderTest {

    @TempDir
    Path directory;

    @Test
    void theRecordIsNotInPlaceUntilItsImageIsFlushedAndAFailedFlushLeavesNothing() throws Exception {
        HostRequirements.assumeCommand("mkfifo");
        ImageRecords<Snapshot> records = new ImageRecords<>(
                "snapshot",
                Ids::isSnapshotId,
                directory,
                RecordCodecs.SNAPSHOT,
                new PoolCapacity(directory, new PoolSpace(directory), CapacityPolicy.DEFAULT, Clock.systemUTC()),
                new RecordLock(directory));
        String id = Ids.snapshotIdFor("snap");
        Snapshot snapshot = new Snapshot(id, "snap", Ids.volumeIdFor("vol"), 1 << 20, Instant.EPOCH, Optional.empty());
        Path image = records.imagePath(id);

        CompletableFuture<Snapshot> create = CompletableFuture.supplyAsync(
                () -> records.create(id, 0, Allocation.SPARSE, snapshot, CommitOrderTest::mkfifo));
        // The record's temporary file is there, flushed, before the image's flush (which waits for a reader).
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (temporaryFiles().isEmpty() && !create.isDone() && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }
        assertThat(temporaryFiles()).singleElement().asString().startsWith(id + ImageRecords.RECORD_SUFFIX + ".");
        assertThat(create).isNotDone();
        assertThat(records.find(id))
                .as("no record while its image is being flushed")
                .isEmpty();

        try (FileInputStream _ = new FileInputStream(image.toFile())) {
            assertThatThrownBy(() -> create.get(30, TimeUnit.SECONDS))
                    .cause()
                    .isInstanceOfSatisfying(
                            StorageException.class,
                            e -> assertThat(e.getMessage()).startsWith("cannot flush " + image + " to disk"));
        }
        assertThat(files())
                .as("no record, temporary file or image after the failed flush")
                .isEmpty();

        // The retry of the same create starts clean and commits.
        assertThat(records.create(id, 0, Allocation.SPARSE, snapshot, CommitOrderTest::touch))
                .isEqualTo(snapshot);
        assertThat(records.find(id)).contains(snapshot);
        assertThat(files()).containsExactlyInAnyOrder(id + ImageRecords.IMAGE_SUFFIX, id + ImageRecords.RECORD_SUFFIX);
    }

    private static void mkfifo(Path path) {
        try {
            Process mkfifo =
                    new ProcessBuilder("mkfifo", path.toString()).inheritIO().start();
            assertThat(mkfifo.waitFor()).isZero();
        } catch (IOException e) {
            throw new AssertionError(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    private static void touch(Path path) {
        try {
            Files.write(path, new byte[] {1});
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    private List<String> temporaryFiles() throws IOException {
        return files().stream()
                .filter(name -> name.endsWith(DurableFiles.TEMP_SUFFIX))
                .toList();
    }

    private List<String> files() throws IOException {
        try (Stream<Path> files = Files.list(directory)) {
            return files.map(p -> p.getFileName().toString()).toList();
        }
    }
}
