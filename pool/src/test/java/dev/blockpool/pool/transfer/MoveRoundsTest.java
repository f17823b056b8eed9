package dev.blockpool.pool.transfer;

import static dev.blockpool.pool.transfer.TransferFixture.MIB;
import static dev.blockpool.pool.transfer.TransferFixture.spec;
import static dev.blockpool.pool.transfer.TransferFixture.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.StorageException;
import dev.blockpool.pool.ContentSource;
import dev.blockpool.pool.Ids;
import dev.blockpool.pool.PoolCapacity;
import dev.blockpool.pool.Volume;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A volume of one node's pool moved into another's in rounds: the first pulls every range that
 * holds data, each later one only what changed since the image the destination holds, and the
 * last is committed as the same volume.
 */
class MoveRoundsTest {

    @TempDir
    Path dir;

    private TransferFixture pools;
    private Volume volume;
    private ContentSource source;
    private String transferId;

    @BeforeEach
    void sourceWithData() {
        pools = new TransferFixture(dir);
        volume = pools.source.volumes().create(spec("pvc-moving", 64 * MIB, Optional.empty()));
        source = ContentSource.volume(volume.id());
        transferId = TransferIds.forVolume(volume.id());
        write(sourceImage(), 0, (int) (4 * MIB), 1);
        write(sourceImage(), 40 * MIB, (int) MIB, 2);
    }

    @Test
    void deltaRoundsLeaveTheImageByteForByteTheSourcesHolesIncluded() throws Exception {
        ImageImports imports = pools.imports();
        assertThat(round(imports)).isEqualTo(5 * MIB);

        write(sourceImage(), 20 * MIB, (int) MIB, 3); // a hole that became data
        write(sourceImage(), 0, (int) MIB, 4); // data rewritten
        punchHole(sourceImage(), 2 * MIB, 2 * MIB); // data that became a hole
        LoopbackImage second = remote(imports);

        assertThat(second.basis()).isPresent();
        assertThat(imports.pull(volume.id(), source, second, (done, size) -> {}))
                .as("only the changed ranges crossed")
                .isEqualTo(4 * MIB);
        assertThat(Files.mismatch(incomingImage(), sourceImage())).isEqualTo(-1);
        assertThat(PoolCapacity.allocatedBytes(incomingImage()))
                .as("the range that became a hole is one here too")
                .isEqualTo(PoolCapacity.allocatedBytes(sourceImage()));
        assertThat(round(imports)).as("a round with nothing changed").isZero();
    }

    @Test
    void aDeltaRoundCutShortIsAppliedAgainAndNeverCommittedMixed() throws Exception {
        ImageImports imports = pools.imports();
        round(imports);
        String held = imports.basisFor(volume.id()).orElseThrow();
        write(sourceImage(), 0, (int) (4 * MIB), 5);
        write(sourceImage(), 30 * MIB, (int) MIB, 6);
        LoopbackImage cut = failingAfter(remote(imports), 2);

        assertThatThrownBy(() -> imports.pull(volume.id(), source, cut, (done, size) -> {}))
                .hasMessage("node node-a does not answer");
        assertThat(imports.basisFor(volume.id()))
                .as("the delta's basis, to be sent again")
                .contains(held);
        assertThatThrownBy(() -> pools.imports().commitMoved(volume))
                .isInstanceOfSatisfying(
                        StorageException.class,
                        e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.PRECONDITION));

        ImageImports restarted = pools.imports();
        LoopbackImage again = remote(restarted);
        assertThat(again.identity()).isEqualTo(cut.identity());
        restarted.pull(volume.id(), source, again, (done, size) -> {});
        assertThat(Files.mismatch(incomingImage(), sourceImage())).isEqualTo(-1);
    }

    @Test
    void aSourceThatNoLongerKeepsTheBasisHasTheRoundStartOverWithTheWholeImage() throws Exception {
        ImageImports imports = pools.imports();
        round(imports);
        write(sourceImage(), 8 * MIB, (int) MIB, 7);
        pools.exports.release(transferId); // as the source's reconcile does after a day unused

        LoopbackImage whole = remote(imports);
        assertThat(whole.basis()).isEmpty();
        assertThat(imports.pull(volume.id(), source, whole, (done, size) -> {})).isEqualTo(6 * MIB);
        assertThat(Files.mismatch(incomingImage(), sourceImage())).isEqualTo(-1);
    }

    @Test
    void theMovedVolumeIsCommittedWithItsOwnIdAndRecordOnce() throws Exception {
        ImageImports imports = pools.imports();
        round(imports);
        byte[] before = Files.readAllBytes(sourceImage());

        Volume moved = imports.commitMoved(volume);
        Volume again = pools.imports().commitMoved(volume);

        assertThat(moved).isEqualTo(volume);
        assertThat(again).isEqualTo(volume);
        assertThat(pools.destination.volumes().find(volume.id())).contains(volume);
        assertThat(Files.readAllBytes(pools.destination.volumes().imagePath(volume.id())))
                .isEqualTo(before);
        assertThat(incomingImage()).doesNotExist();
    }

    @Test
    void aVolumeRecordCrossesWithEveryFieldButItsAttachments() {
        byte[] sent = MovedVolumeRecords.encode(volume);

        assertThat(MovedVolumeRecords.decode("node-a", volume.id(), sent)).isEqualTo(volume);
        assertThatThrownBy(() -> MovedVolumeRecords.decode("node-a", Ids.volumeIdFor("pvc-other"), sent))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.INTERNAL));
    }

    /** One round as a move runs it: opened on the basis the destination names; the bytes it wrote. */
    private long round(ImageImports imports) {
        return imports.pull(volume.id(), source, remote(imports), (done, size) -> {});
    }

    private LoopbackImage remote(ImageImports imports) {
        return new LoopbackImage(
                TransferFixture.SOURCE_NODE, pools.exports.open(source, transferId, imports.basisFor(volume.id())));
    }

    private static LoopbackImage failingAfter(LoopbackImage image, int reads) {
        AtomicInteger done = new AtomicInteger();
        return new LoopbackImage(TransferFixture.SOURCE_NODE, image) {
            @Override
            public Chunk read(long offset, int length) {
                if (done.incrementAndGet() > reads) {
                    throw StorageException.unavailable("node node-a does not answer");
                }
                return super.read(offset, length);
            }
        };
    }

    private Path sourceImage() {
        return pools.source.volumes().imagePath(volume.id());
    }

    private Path incomingImage() {
        return pools.destination.root().resolve("incoming").resolve(volume.id() + ".img");
    }

    private static void punchHole(Path image, long offset, long length) throws IOException, InterruptedException {
        Process punch = new ProcessBuilder(
                        "fallocate",
                        "--punch-hole",
                        "--offset",
                        Long.toString(offset),
                        "--length",
                        Long.toString(length),
                        image.toString())
                .redirectErrorStream(true)
                .start();
        String output = new String(punch.getInputStream().readAllBytes());
        assertThat(punch.waitFor()).as(output).isZero();
    }
}
