package dev.blockpool.pool.transfer;

import static dev.blockpool.pool.transfer.TransferFixture.MIB;
import static dev.blockpool.pool.transfer.TransferFixture.spec;
import static dev.blockpool.pool.transfer.TransferFixture.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.OperationLocks;
import dev.blockpool.common.StorageException;
import dev.blockpool.pool.ContentSource;
import dev.blockpool.pool.Ids;
import dev.blockpool.pool.PoolCapacity;
import dev.blockpool.pool.Snapshot;
import dev.blockpool.pool.Volume;
import dev.blockpool.pool.extents.ByteRange;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A snapshot or volume of one node's pool pulled into another's: the exports, the pull, and the volume made of it. */
class ImageTransferTest {

    @TempDir
    Path dir;

    private TransferFixture pools;
    private Volume sourceVolume;
    private Snapshot snapshot;
    private final String target = Ids.volumeIdFor("pvc-restored");
    /** The bytes the source's volume holds data in: three ranges, one across a chunk's edge. */
    private static final long DATA_BYTES = 4 * MIB;

    @BeforeEach
    void sourceWithData() {
        pools = new TransferFixture(dir);
        sourceVolume = pools.source.volumes().create(spec("pvc-source", 64 * MIB, Optional.empty()));
        Path image = pools.source.volumes().imagePath(sourceVolume.id());
        write(image, 0, (int) MIB, 1);
        write(image, 3 * MIB + 512 * 1024, (int) (2 * MIB), 2); // across the edge of two chunks
        write(image, 60 * MIB, (int) MIB, 3);
        snapshot = pools.source.snapshots().create("snap-1", sourceVolume, image);
    }

    private ContentSource fromSnapshot() {
        return ContentSource.snapshot(snapshot.id());
    }

    private Path snapshotImage() {
        return pools.source.snapshots().imagePath(snapshot.id());
    }

    private Volume restore(ImageImports imports) {
        return imports.createVolume(spec("pvc-restored", snapshot.sizeBytes(), Optional.of(fromSnapshot())));
    }

    @Test
    void aPulledSnapshotHoldsItsBytesAndOnlyItsDataCrossed() throws IOException {
        LoopbackImage remote = pools.remote(fromSnapshot(), target);
        ImageImports imports = pools.imports();
        List<Long> progress = new ArrayList<>();

        imports.pull(target, fromSnapshot(), remote, (done, size) -> progress.add(done));
        Volume restored = restore(imports);

        Path image = pools.destination.volumes().imagePath(restored.id());
        assertThat(Files.mismatch(image, snapshotImage())).isEqualTo(-1);
        assertThat(remote.bytesRead.get()).isEqualTo(DATA_BYTES);
        assertThat(progress).first().isEqualTo(0L);
        assertThat(progress).last().isEqualTo(snapshot.sizeBytes());
        assertThat(restored.source()).contains(fromSnapshot());
        assertThat(pools.destination.root().resolve("incoming").toFile().list())
                .as("nothing of the pull left but the pool's lock of pulls")
                .containsExactly(PullLocks.FILE);
        assertThat(pools.destination.capacity().read().promisedBytes()).isEqualTo(restored.capacityBytes());
    }

    @Test
    void aRestoreLargerThanItsSourceIsGrownAfterTheMove() throws IOException {
        LoopbackImage remote = pools.remote(fromSnapshot(), target);
        ImageImports imports = pools.imports();
        imports.pull(target, fromSnapshot(), remote, (done, size) -> {});

        Volume restored =
                imports.createVolume(spec("pvc-restored", 2 * snapshot.sizeBytes(), Optional.of(fromSnapshot())));

        Path image = pools.destination.volumes().imagePath(restored.id());
        assertThat(Files.size(image)).isEqualTo(2 * snapshot.sizeBytes());
        assertThat(pools.destination.capacity().read().promisedBytes()).isEqualTo(2 * snapshot.sizeBytes());
    }

    @Test
    void aVolumeIsServedAsFrozenAtItsTransfersFirstOpen() throws IOException {
        ContentSource fromVolume = ContentSource.volume(sourceVolume.id());
        long promisedBefore = pools.source.capacity().read().promisedBytes();
        LoopbackImage remote = pools.remote(fromVolume, target);
        Path copy = pools.source.root().resolve("outgoing").resolve(target + ".1.img");
        assertThat(pools.source.capacity().read().promisedBytes())
                .as("the frozen copy promises the blocks it holds, as a snapshot")
                .isEqualTo(promisedBefore + PoolCapacity.allocatedBytes(copy))
                .isGreaterThanOrEqualTo(promisedBefore + DATA_BYTES);
        Path frozen = dir.resolve("frozen.img");
        Files.copy(pools.source.volumes().imagePath(sourceVolume.id()), frozen);
        write(pools.source.volumes().imagePath(sourceVolume.id()), 10 * MIB, (int) MIB, 9); // after the open

        String reopened =
                pools.exports.open(fromVolume, target, Optional.empty()).identity();
        ImageImports imports = pools.imports();
        imports.pull(target, fromVolume, remote, (done, size) -> {});
        Volume clone =
                imports.createVolume(spec("pvc-restored", sourceVolume.capacityBytes(), Optional.of(fromVolume)));

        assertThat(reopened).isEqualTo(remote.identity());
        assertThat(Files.mismatch(pools.destination.volumes().imagePath(clone.id()), frozen))
                .isEqualTo(-1);
        pools.exports.release(target);
        assertThat(pools.source.root().resolve("outgoing")).isEmptyDirectory();
        assertThat(pools.source.capacity().read().promisedBytes()).isEqualTo(promisedBefore);
    }

    @Test
    void aFreezeOutlivesTheOpenThatBeganItAndATransferFreezesOnce() throws IOException {
        // Freezes held until the test runs them: each open finds its copy still under way.
        List<Runnable> freezes = new ArrayList<>();
        PoolImageExports exports = new PoolImageExports(
                pools.source, Clock.systemUTC(), new BlockingCalls("test-export", 2), freezes::add, Duration.ZERO);
        ContentSource fromVolume = ContentSource.volume(sourceVolume.id());
        Path image = pools.source.volumes().imagePath(sourceVolume.id());

        for (int open = 0; open < 3; open++) {
            assertThatThrownBy(() -> exports.open(fromVolume, target, Optional.empty()))
                    .isInstanceOfSatisfying(
                            StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.BUSY))
                    .hasMessageContaining("freezing volume")
                    .hasMessageContaining(sourceVolume.id())
                    .hasMessageContaining("0 of " + PoolCapacity.allocatedBytes(image) + " bytes copied so far");
        }
        assertThatThrownBy(() -> exports.release(target)).hasMessageContaining("once its copy is done");
        assertThat(freezes)
                .as("one copy for the transfer, however often it is opened")
                .hasSize(1);

        Path frozen = dir.resolve("frozen.img");
        Files.copy(image, frozen);
        freezes.getFirst().run(); // the copy the first open began, long after that open answered
        ImageReader opened = exports.open(fromVolume, target, Optional.empty());
        ImageImports imports = pools.imports();
        imports.pull(target, fromVolume, new LoopbackImage(TransferFixture.SOURCE_NODE, opened), (done, size) -> {});
        Volume clone =
                imports.createVolume(spec("pvc-restored", sourceVolume.capacityBytes(), Optional.of(fromVolume)));

        assertThat(Files.mismatch(pools.destination.volumes().imagePath(clone.id()), frozen))
                .isEqualTo(-1);
        assertThat(freezes).hasSize(1);
        exports.release(target);
        assertThat(pools.source.root().resolve("outgoing")).isEmptyDirectory();
    }

    @Test
    void aPullCutShortContinuesWhereItWasInANewProcess() throws IOException {
        // the first range, and the first chunk of the second
        LoopbackImage failing = failingFrom(3 * MIB + 512 * 1024 + MIB);
        assertThatThrownBy(() -> pools.imports().pull(target, fromSnapshot(), failing, (done, size) -> {}))
                .isInstanceOf(StorageException.class)
                .hasMessage("node node-a does not answer");
        assertThat(pools.imports().doneBytes(target)).contains(3 * MIB + 512 * 1024 + MIB);

        LoopbackImage again = pools.remote(fromSnapshot(), target);
        ImageImports restarted = pools.imports();
        restarted.pull(target, fromSnapshot(), again, (done, size) -> {});

        assertThat(again.bytesRead.get()).isEqualTo(DATA_BYTES - 2 * MIB);
        Volume restored = restore(restarted);
        assertThat(Files.mismatch(pools.destination.volumes().imagePath(restored.id()), snapshotImage()))
                .isEqualTo(-1);
    }

    @Test
    void aSecondPullOfTheSameVolumeWaitsForTheFirstToEnd() throws Exception {
        // A pull held mid-copy, as a blockpool-csi move left running by a cut exec would be.
        CountDownLatch reading = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        LoopbackImage held = new LoopbackImage(TransferFixture.SOURCE_NODE, open()) {
            @Override
            public Chunk read(long at, int length) {
                reading.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return super.read(at, length);
            }
        };
        ExecutorService first = Executors.newSingleThreadExecutor();
        try {
            Future<Long> pulling = first.submit(() -> pools.imports().pull(target, fromSnapshot(), held, (d, s) -> {}));
            reading.await();

            // another process's pull (its own ImageImports, its own channel on the lock file)
            LoopbackImage second = pools.remote(fromSnapshot(), target);
            assertThatThrownBy(() -> pools.imports().pull(target, fromSnapshot(), second, (d, s) -> {}))
                    .isInstanceOf(StorageException.class)
                    .hasMessageContaining("another pull of volume " + target + " into this pool is under way");
            assertThat(second.bytesRead.get())
                    .as("the refused pull read nothing")
                    .isZero();

            release.countDown();
            pulling.get(1, TimeUnit.MINUTES);
        } finally {
            release.countDown();
            first.shutdownNow();
        }
        LoopbackImage after = pools.remote(fromSnapshot(), target);
        pools.imports().pull(target, fromSnapshot(), after, (d, s) -> {});
        assertThat(after.bytesRead.get())
                .as("the first pull finished the image")
                .isZero();
    }

    @Test
    void anImageLostWithACreateCutShortIsPulledAgain() throws IOException {
        ImageImports imports = pools.imports();
        imports.pull(target, fromSnapshot(), pools.remote(fromSnapshot(), target), (done, size) -> {});
        // A kill after the image was renamed into volumes/, before the volume's record was committed:
        Path moved = pools.destination.volumes().imagePath(target);
        Files.move(pools.destination.root().resolve("incoming").resolve(target + ".img"), moved);
        Files.setLastModifiedTime(moved, FileTime.from(Instant.now().minusSeconds(60)));
        pools.destination.reconcile(new OperationLocks());
        assertThat(moved).as("an image without its record").doesNotExist();

        LoopbackImage again = pools.remote(fromSnapshot(), target);
        ImageImports restarted = pools.imports();
        restarted.pull(target, fromSnapshot(), again, (done, size) -> {});

        assertThat(again.bytesRead.get()).isEqualTo(DATA_BYTES);
        Volume restored = restore(restarted);
        assertThat(Files.mismatch(pools.destination.volumes().imagePath(restored.id()), snapshotImage()))
                .isEqualTo(-1);
    }

    @Test
    void aPullRecordsItsProgressAsItWritesNotOnlyWhenItFails() {
        Volume large = pools.source.volumes().create(spec("pvc-large", 128 * MIB, Optional.empty()));
        Path image = pools.source.volumes().imagePath(large.id());
        write(image, 0, (int) (80 * MIB), 5);
        ContentSource fromVolume = ContentSource.volume(large.id());
        AtomicInteger reads = new AtomicInteger();
        LoopbackImage dying =
                new LoopbackImage(
                        TransferFixture.SOURCE_NODE, pools.exports.open(fromVolume, target, Optional.empty())) {
                    @Override
                    public Chunk read(long offset, int length) {
                        if (reads.incrementAndGet() > 70) {
                            throw new IllegalStateException("the process dies here"); // not a failure the pull records
                        }
                        return super.read(offset, length);
                    }
                };

        assertThatThrownBy(() -> pools.imports().pull(target, fromVolume, dying, (done, size) -> {}))
                .isInstanceOf(IllegalStateException.class);

        assertThat(pools.imports().doneBytes(target)).contains(ImageImports.RECORD_EVERY_BYTES);
    }

    @Test
    void aSourceOfAnotherIdentityStartsThePullOver() {
        LoopbackImage failing = failingFrom(3 * MIB + 512 * 1024 + MIB);
        assertThatThrownBy(() -> pools.imports().pull(target, fromSnapshot(), failing, (done, size) -> {}))
                .isInstanceOf(StorageException.class);

        LoopbackImage changed = new LoopbackImage(TransferFixture.SOURCE_NODE, open()) {
            @Override
            public String identity() {
                return "another-image";
            }
        };
        pools.imports().pull(target, fromSnapshot(), changed, (done, size) -> {});

        assertThat(changed.bytesRead.get()).isEqualTo(DATA_BYTES);
    }

    @Test
    void aDamagedChunkIsReadAgain() throws IOException {
        AtomicInteger reads = new AtomicInteger();
        LoopbackImage damagingOnce = new LoopbackImage(TransferFixture.SOURCE_NODE, open()) {
            @Override
            public Chunk read(long offset, int length) {
                Chunk chunk = super.read(offset, length);
                return reads.incrementAndGet() == 1 ? damaged(chunk) : chunk;
            }
        };
        ImageImports imports = pools.imports();
        imports.pull(target, fromSnapshot(), damagingOnce, (done, size) -> {});

        assertThat(damagingOnce.bytesRead.get()).isEqualTo(DATA_BYTES + MIB);
        Volume restored = restore(imports);
        assertThat(Files.mismatch(pools.destination.volumes().imagePath(restored.id()), snapshotImage()))
                .isEqualTo(-1);
    }

    @Test
    void aChunkDamagedAtEveryReadFailsThePullSayingWhere() {
        LoopbackImage damaging = new LoopbackImage(TransferFixture.SOURCE_NODE, open()) {
            @Override
            public Chunk read(long offset, int length) {
                return damaged(super.read(offset, length));
            }
        };

        assertThatThrownBy(() -> pools.imports().pull(target, fromSnapshot(), damaging, (done, size) -> {}))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.UNAVAILABLE))
                .hasMessageContaining("the chunk of 1048576 bytes at offset 0 arrived damaged 3 times")
                .hasMessageContaining("its CRC-32C did not match its bytes")
                .hasMessageNotContaining("Exception");
        // no chunk is read more than 3 times, those read ahead of the first included
        assertThat(damaging.bytesRead.get()).isBetween(3 * MIB, 3L * ChunkReads.IN_FLIGHT * MIB);
    }

    @Test
    void aSourceThatSendsWhatNoImageCanBeIsRefused() {
        long size = snapshot.sizeBytes();
        assertRefused(
                new LoopbackImage(TransferFixture.SOURCE_NODE, open()) {
                    @Override
                    public List<ByteRange> ranges(long from, int max) {
                        return List.of(new ByteRange(size - MIB, 2 * MIB));
                    }
                },
                "it sent a range from " + (size - MIB) + " to " + (size + MIB) + ", past its size of " + size
                        + " bytes");
        assertRefused(
                new LoopbackImage(TransferFixture.SOURCE_NODE, open()) {
                    @Override
                    public List<ByteRange> ranges(long from, int max) {
                        return List.of(new ByteRange(2 * MIB, MIB), new ByteRange(MIB, MIB));
                    }
                },
                "it sent the range at " + MIB + " after offset " + 3 * MIB + ": its ranges must increase");
        AtomicInteger asked = new AtomicInteger();
        assertRefused(
                new LoopbackImage(TransferFixture.SOURCE_NODE, open()) {
                    @Override
                    public long sizeBytes() {
                        return asked.incrementAndGet() > 1 ? size + MIB : size;
                    }
                },
                "its size changed from " + size + " to " + (size + MIB) + " bytes during the pull");
        assertThatThrownBy(() -> pools.imports().pull(target, fromSnapshot(), shortChunks(), (done, size2) -> {}))
                .isInstanceOf(StorageException.class)
                .hasMessageContaining("arrived damaged 3 times (the last time it held 1024 bytes)");
    }

    private LoopbackImage shortChunks() {
        return new LoopbackImage(TransferFixture.SOURCE_NODE, open()) {
            @Override
            public Chunk read(long offset, int length) {
                Chunk chunk = super.read(offset, length);
                return new Chunk(offset, Arrays.copyOf(chunk.data(), 1024), chunk.crc32c());
            }
        };
    }

    private void assertRefused(LoopbackImage lying, String why) {
        assertThatThrownBy(() -> pools.imports().pull(target, fromSnapshot(), lying, (done, size) -> {}))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.INTERNAL))
                .hasMessage("the pull of snapshot \"" + snapshot.id() + "\" from node node-a for volume " + target
                        + " is refused: " + why + "; look at the driver's log on node node-a");
    }

    @Test
    void aSecondRoundOnTheFirstsIdentitySendsOnlyWhatChanged() {
        ContentSource fromVolume = ContentSource.volume(sourceVolume.id());
        ImageReader first = pools.exports.open(fromVolume, target, Optional.empty());
        assertThat(first.ranges(0, 100)).hasSize(3);
        write(pools.source.volumes().imagePath(sourceVolume.id()), 20 * MIB, (int) MIB, 7);

        ImageReader resumed = pools.exports.open(fromVolume, target, Optional.empty());
        ImageReader second = pools.exports.open(fromVolume, target, Optional.of(first.identity()));
        ImageReader secondResumed = pools.exports.open(fromVolume, target, Optional.of(first.identity()));

        assertThat(resumed.identity()).isEqualTo(first.identity());
        assertThat(second.identity()).isNotEqualTo(first.identity());
        assertThat(second.ranges(0, 100)).containsExactly(new ByteRange(20 * MIB, MIB));
        assertThat(secondResumed.identity()).isEqualTo(second.identity());
        assertThat(secondResumed.ranges(0, 100)).containsExactly(new ByteRange(20 * MIB, MIB));
        assertThat(pools.exports
                        .open(fromVolume, target, Optional.of("unknown"))
                        .ranges(0, 100))
                .hasSize(4);
    }

    @Test
    void aTransferIdThatCouldNameAPathIsRefused() {
        assertThatThrownBy(() -> pools.exports.open(fromSnapshot(), "../volumes/x", Optional.empty()))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.INVALID));
        assertThatThrownBy(() -> pools.exports.open(ContentSource.volume("../../etc"), target, Optional.empty()))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.NOT_FOUND));
        assertThatThrownBy(() -> pools.imports()
                        .pull("../x", fromSnapshot(), pools.remote(fromSnapshot(), target), (done, size) -> {}))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.INVALID));
    }

    /**
     * The snapshot, as a source whose connection drops for every read from {@code offset} on: by
     * offset rather than by count, since a pull keeps several reads in flight in no fixed order.
     */
    private LoopbackImage failingFrom(long offset) {
        return new LoopbackImage(TransferFixture.SOURCE_NODE, open()) {
            @Override
            public Chunk read(long at, int length) {
                if (at >= offset) {
                    throw StorageException.unavailable("node node-a does not answer");
                }
                return super.read(at, length);
            }
        };
    }

    private ImageReader open() {
        return pools.exports.open(fromSnapshot(), target, Optional.empty());
    }

    private static Chunk damaged(Chunk chunk) {
        byte[] data = chunk.data().clone();
        data[0] ^= 1;
        return new Chunk(chunk.offset(), data, chunk.crc32c());
    }
}
