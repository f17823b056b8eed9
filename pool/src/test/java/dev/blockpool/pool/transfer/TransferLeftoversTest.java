package dev.blockpool.pool.transfer;

import static dev.blockpool.pool.transfer.TransferFixture.MIB;
import static dev.blockpool.pool.transfer.TransferFixture.spec;
import static dev.blockpool.pool.transfer.TransferFixture.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.OperationLocks;
import dev.blockpool.common.StorageException;
import dev.blockpool.pool.CapacityPolicy;
import dev.blockpool.pool.ContentSource;
import dev.blockpool.pool.Ids;
import dev.blockpool.pool.Snapshot;
import dev.blockpool.pool.Volume;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What transfers hold of a pool while they last, and what the reconcile removes of those left behind. */
class TransferLeftoversTest {

    @TempDir
    Path dir;

    @Test
    void anIncomingImageHoldsItsFullSizeSoTwoPullsCannotBothTakeTheLastRoom() {
        CapacityPolicy thin = CapacityPolicy.overcommitted(1.5); // so that one pull fits, and two do not
        TransferFixture pools = new TransferFixture(dir, thin);
        long size = pools.destination.capacity().read().limitBytes() * 6 / 10 / MIB * MIB;
        Volume big = pools.source.volumes().create(spec("pvc-big", size, Optional.empty()));
        Path image = pools.source.volumes().imagePath(big.id());
        write(image, 0, (int) MIB, 1);
        Snapshot snapshot = pools.source.snapshots().create("snap-big", big, image);
        ContentSource source = ContentSource.snapshot(snapshot.id());
        String first = Ids.volumeIdFor("pvc-first");
        String second = Ids.volumeIdFor("pvc-second");
        ImageImports imports = pools.imports();

        imports.pull(first, source, pools.remote(source, first), (done, total) -> {});

        assertThat(pools.destination.capacity().read().promisedBytes()).isEqualTo(size);
        assertThat(TransferFixture.open(dir.resolve("b"), thin)
                        .capacity()
                        .read()
                        .promisedBytes())
                .as("counted from the pool by a new process")
                .isEqualTo(size);
        assertThatThrownBy(() -> imports.pull(second, source, pools.remote(source, second), (done, total) -> {}))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.EXHAUSTED))
                .hasMessageContaining(
                        "the pool cannot promise " + size + " more bytes to the image pulled for volume " + second);
        assertThat(pools.destination.root().resolve("incoming").resolve(second + ".img"))
                .doesNotExist();

        Volume restored = imports.createVolume(spec("pvc-first", size, Optional.of(source)));
        assertThat(pools.destination.capacity().read().promisedBytes())
                .as("the pulled image's promise became the volume's: the move needed no room twice")
                .isEqualTo(restored.capacityBytes());
    }

    @Test
    void theReconcileRemovesPullsNoLongerWantedAndExportsLongUnused() throws IOException {
        TransferFixture pools = new TransferFixture(dir);
        Volume volume = pools.source.volumes().create(spec("pvc-source", 8 * MIB, Optional.empty()));
        write(pools.source.volumes().imagePath(volume.id()), 0, (int) MIB, 1);
        ContentSource source = ContentSource.volume(volume.id());
        String made = Ids.volumeIdFor("pvc-made");
        String abandoned = Ids.volumeIdFor("pvc-abandoned");
        String underWay = Ids.volumeIdFor("pvc-under-way");
        ImageImports imports = pools.imports();
        for (String target : new String[] {made, abandoned, underWay}) {
            imports.pull(target, source, pools.remote(source, target), (done, total) -> {});
        }
        pools.destination.volumes().create(spec("pvc-made", 8 * MIB, Optional.empty())); // made some other way
        Path incoming = pools.destination.root().resolve("incoming");
        Path outgoing = pools.source.root().resolve("outgoing");
        age(incoming, made, Duration.ofMinutes(1));
        age(incoming, abandoned, Duration.ofHours(25));
        age(incoming, underWay, Duration.ofHours(23));
        age(outgoing, abandoned, Duration.ofHours(25));
        age(outgoing, underWay, Duration.ofHours(23));
        Path cutShort = Files.write(outgoing.resolve("vol-cut-short.1.img"), new byte[] {1});
        Files.setLastModifiedTime(cutShort, FileTime.from(Instant.now().minusSeconds(60)));

        pools.destination.reconcile(new OperationLocks());
        pools.source.reconcile(new OperationLocks());

        assertThat(names(incoming)).containsExactlyInAnyOrder(underWay + ".img", underWay + ".json");
        assertThat(names(outgoing))
                .containsExactlyInAnyOrder(made + ".1.img", made + ".json", underWay + ".1.img", underWay + ".json");
    }

    /** Makes every file of the transfer {@code id} in {@code directory} last touched {@code ago}. */
    private static void age(Path directory, String id, Duration ago) throws IOException {
        try (Stream<Path> files = Files.list(directory)) {
            for (Path file : files.filter(f -> f.getFileName().toString().startsWith(id + "."))
                    .toList()) {
                Files.setLastModifiedTime(file, FileTime.from(Instant.now().minus(ago)));
            }
        }
    }

    /** The transfers' files: not the pool's lock of pulls, which stays. */
    private static Stream<String> names(Path directory) throws IOException {
        try (Stream<Path> files = Files.list(directory)) {
            return files
                    .map(file -> file.getFileName().toString())
                    .filter(name -> !name.equals(PullLocks.FILE))
                    .toList()
                    .stream();
        }
    }
}
