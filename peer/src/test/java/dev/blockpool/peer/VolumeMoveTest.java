package dev.blockpool.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.csi.CsiException;
import dev.blockpool.pool.AccessType;
import dev.blockpool.pool.Allocation;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.Volume;
import dev.blockpool.pool.VolumeSpec;
import dev.blockpool.pool.transfer.ImageImports;
import dev.blockpool.pool.transfer.PoolImageExports;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** A volume moved from node a's pool to node b's over the peer channel, in rounds, then finished. */
class VolumeMoveTest {

    private static final long MIB = 1 << 20;

    @RegisterExtension
    final TestPeers peers = new TestPeers();

    @TempDir
    Path dir;

    private Pool poolA;
    private Pool poolB;
    private Volume volume;
    /** What holds each volume on node a, as its host would say. */
    private final Map<String, String> heldOnA = new ConcurrentHashMap<>();

    private final ByteArrayOutputStream said = new ByteArrayOutputStream();
    private VolumeMove move;

    @BeforeEach
    void twoNodes() throws Exception {
        poolA = Pool.open(dir.resolve("a"), new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO);
        poolB = Pool.open(dir.resolve("b"), new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO);
        volume = poolA.volumes()
                .create(new VolumeSpec(
                        "pvc-moving",
                        32 * MIB,
                        "ext4",
                        Allocation.SPARSE,
                        Set.of(AccessType.MOUNT),
                        Map.of("tier", "gold"),
                        Optional.empty()));
        // node a retires as its controller does: refused while held there
        VolumeRetirer retirer = VolumeRetirer.of(id -> Optional.ofNullable(heldOnA.get(id)), (id, to) -> {
            if (heldOnA.containsKey(id)) {
                throw CsiException.failedPrecondition("volume %s is in use on node node-a: %s", id, heldOnA.get(id));
            }
            poolA.volumes().delete(id);
        });
        PeerServer serverA = peers.server(
                peers.certificates("node-a"),
                new PoolImageExports(poolA, Clock.systemUTC()),
                VolumeModifier.NONE,
                retirer,
                PeerServer.Bounds.DEFAULT,
                BandwidthLimit.unlimited());
        PeerClient clientB = peers.client(peers.certificates("node-b"), TestPeers.at("node-a", serverA));
        move = new VolumeMove(
                poolB,
                new ImageImports(poolB),
                clientB,
                "node-a",
                "node-b",
                volume.id(),
                new PrintStream(said, true, StandardCharsets.UTF_8));
    }

    @Test
    void roundsWhileItIsWrittenThenTheLastMakeItNodeBsByteForByte() throws Exception {
        write(0, 4 * MIB, 1);
        assertThat(move.copy(5, MIB))
                .as("a whole round, then one of nothing changed")
                .isEqualTo(2);
        write(8 * MIB, 2 * MIB, 2);
        write(0, MIB, 3);
        heldOnA.put(volume.id(), "/dev/loop4, mounted at [/var/lib/kubelet/staging]");

        assertThatThrownBy(move::finish)
                .isInstanceOf(VolumeMove.InUseOnSource.class)
                .hasMessageContaining("in use on node node-a")
                .hasMessageContaining("/dev/loop4");
        assertThat(poolB.volumes().find(volume.id())).isEmpty();

        write(30 * MIB, MIB, 4); // the last writes before its pod stopped
        byte[] last = Files.readAllBytes(poolA.volumes().imagePath(volume.id()));
        heldOnA.clear();
        move.finish();

        assertThat(poolB.volumes().find(volume.id())).contains(volume);
        assertThat(Files.readAllBytes(poolB.volumes().imagePath(volume.id())))
                .as("every byte written on node a")
                .isEqualTo(last);
        assertThat(poolA.volumes().find(volume.id())).isEmpty();
        assertThat(poolA.root().resolve("outgoing")).isEmptyDirectory();
        assertThat(said.toString(StandardCharsets.UTF_8))
                .contains("round 1: " + 4 * MIB + " bytes copied (every range that holds data")
                .contains("round 2: 0 bytes copied (what changed since the round before")
                .contains("moved from node node-a to node node-b");

        move.finish(); // again: nothing left to do, and nothing undone
        assertThat(poolB.volumes().find(volume.id())).contains(volume);
    }

    @Test
    void aVolumeNodeAHoldsNotIsRefusedSayingSo() {
        poolA.volumes().delete(volume.id());

        assertThatThrownBy(() -> move.copy(1, MIB)).hasMessageContaining("node node-a holds no volume " + volume.id());
    }

    @Test
    void aRoundWaitsForASourceWhoseFreezeOutlastsItsCalls() throws Exception {
        write(0, 4 * MIB, 1);
        // node a's freezes held until the test runs them, as a sparse copy of a large volume lasts
        BlockingQueue<Runnable> freezes = new LinkedBlockingQueue<>();
        PeerServer slowA = peers.server(
                peers.certificates("node-a"),
                new PoolImageExports(poolA, Clock.systemUTC(), freezes::add, Duration.ZERO),
                VolumeModifier.NONE,
                VolumeRetirer.of(id -> Optional.empty(), (id, to) -> {}),
                PeerServer.Bounds.DEFAULT,
                BandwidthLimit.unlimited());
        VolumeMove waiting = new VolumeMove(
                poolB,
                new ImageImports(poolB),
                peers.client(peers.certificates("node-b"), TestPeers.at("node-a", slowA)),
                "node-a",
                "node-b",
                volume.id(),
                new PrintStream(said, true, StandardCharsets.UTF_8));
        ExecutorService mover = Executors.newSingleThreadExecutor();
        try {
            Future<Integer> rounds = mover.submit(() -> waiting.copy(1, MIB));
            Runnable freeze = freezes.poll(30, TimeUnit.SECONDS);
            assertThat(freeze).as("the round's open began a freeze").isNotNull();
            long patience = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!said.toString(StandardCharsets.UTF_8).contains("bytes copied so far")
                    && System.nanoTime() < patience) {
                Thread.sleep(20);
            }
            assertThat(said.toString(StandardCharsets.UTF_8))
                    .contains("waiting for node node-a: ")
                    .contains("freezing volume");
            byte[] frozen = Files.readAllBytes(poolA.volumes().imagePath(volume.id()));
            freeze.run();

            assertThat(rounds.get(60, TimeUnit.SECONDS)).isEqualTo(1);
            assertThat(freezes).as("the opens it repeated began no second copy").isEmpty();
            assertThat(Files.readAllBytes(poolB.root().resolve("incoming").resolve(volume.id() + ".img")))
                    .isEqualTo(frozen);
        } finally {
            mover.shutdownNow();
        }
    }

    private void write(long offset, long length, int value) throws IOException {
        byte[] data = new byte[(int) length];
        Arrays.fill(data, (byte) value);
        try (RandomAccessFile image =
                new RandomAccessFile(poolA.volumes().imagePath(volume.id()).toFile(), "rw")) {
            image.seek(offset);
            image.write(data);
        }
    }
}
