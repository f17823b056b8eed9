package dev.blockpool.controller;

import static dev.blockpool.controller.ControllerHarness.MIB;
import static dev.blockpool.controller.ControllerHarness.fromSnapshot;
import static dev.blockpool.controller.ControllerHarness.singleWriter;
import static dev.blockpool.csi.StatusAssertions.failure;
import static org.assertj.core.api.Assertions.assertThat;

import csi.v1.Csi.CapacityRange;
import csi.v1.Csi.ControllerModifyVolumeRequest;
import csi.v1.Csi.CreateVolumeRequest;
import csi.v1.Csi.Topology;
import csi.v1.Csi.TopologyRequirement;
import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.common.StorageException;
import dev.blockpool.csi.PoolScope;
import dev.blockpool.pool.AccessType;
import dev.blockpool.pool.Allocation;
import dev.blockpool.pool.ContentSource;
import dev.blockpool.pool.Ids;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.Snapshot;
import dev.blockpool.pool.Volume;
import dev.blockpool.pool.VolumeSpec;
import dev.blockpool.pool.transfer.Chunk;
import dev.blockpool.pool.transfer.LoopbackImage;
import dev.blockpool.pool.transfer.PoolImageExports;
import dev.blockpool.pool.transfer.RemoteImage;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node-local controller restoring a snapshot that lives in another node's pool: the pull runs
 * in the background, CreateVolume answers ABORTED with its progress until it is done, then the
 * volume, and the source's export is released.
 */
class RemoteRestoreTest {

    private static final String NODE = "node-a";
    private static final String PEER = "node-b";
    /** Long enough for no call to wait in vain, short enough that an unfinished pull is answered at once. */
    private static final Duration WAIT = Duration.ofMillis(200);

    @TempDir
    Path dir;

    private Pool peerPool;
    private Volume peerVolume;
    private Snapshot snapshot;
    private PeerNode peer;
    private ControllerHarness controller;

    /** The other node: its pool's exports as the peer channel would carry them, its reads held until let go. */
    private final class PeerNode implements OtherNodes {
        final PoolImageExports exports = new PoolImageExports(peerPool, Clock.systemUTC());
        final CountDownLatch readsLetGo = new CountDownLatch(1);
        final AtomicLong bytesRead = new AtomicLong();
        final AtomicInteger opens = new AtomicInteger();
        final List<String> released = new CopyOnWriteArrayList<>();
        /** Reads that fail as a connection that drops would, before the rest succeed. */
        final AtomicInteger failingReads = new AtomicInteger();

        @Override
        public Optional<RemoteImage> open(ContentSource source, String transferId, Optional<String> basis) {
            if (exports.find(source).isEmpty()) {
                return Optional.empty();
            }
            opens.incrementAndGet();
            return Optional.of(new LoopbackImage(PEER, exports.open(source, transferId, basis)) {
                @Override
                public Chunk read(long offset, int length) {
                    try {
                        readsLetGo.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    if (failingReads.getAndDecrement() > 0) {
                        throw StorageException.unavailable("node %s does not answer", PEER);
                    }
                    Chunk chunk = super.read(offset, length);
                    PeerNode.this.bytesRead.addAndGet(chunk.data().length);
                    return chunk;
                }
            });
        }

        @Override
        public void release(String nodeId, String transferId) {
            released.add(nodeId + "/" + transferId);
            exports.release(transferId);
        }

        @Override
        public boolean modifyVolume(ControllerModifyVolumeRequest request) {
            return false;
        }
    }

    @BeforeEach
    void peerWithASnapshot() throws IOException {
        peerPool = Pool.open(
                dir.resolve("peer"), new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO, new BlockingCalls());
        peerVolume = peerPool.volumes()
                .create(new VolumeSpec(
                        "pvc-on-b",
                        64 * MIB,
                        "ext4",
                        Allocation.SPARSE,
                        Set.of(AccessType.MOUNT),
                        Map.of(),
                        Optional.empty()));
        Path image = peerPool.volumes().imagePath(peerVolume.id());
        try (RandomAccessFile file = new RandomAccessFile(image.toFile(), "rw")) {
            byte[] data = new byte[(int) (2 * MIB)];
            Arrays.fill(data, (byte) 'b');
            file.seek(8 * MIB);
            file.write(data);
            file.getFD().sync();
        }
        snapshot = peerPool.snapshots().create("snap-on-b", peerVolume, image);
        peer = new PeerNode();
        controller = new ControllerHarness(dir.resolve("pool"), PoolScope.nodeLocal(NODE), peer, WAIT);
    }

    @AfterEach
    void stop() {
        peer.readsLetGo.countDown();
        controller.close();
    }

    private CreateVolumeRequest restore() {
        return CreateVolumeRequest.newBuilder()
                .setName("pvc-restored-on-a")
                .addVolumeCapabilities(singleWriter())
                .setVolumeContentSource(fromSnapshot(snapshot.id()))
                .setAccessibilityRequirements(
                        TopologyRequirement.newBuilder().addRequisite(here()).addPreferred(here()))
                .build();
    }

    private static Topology here() {
        return Topology.newBuilder()
                .putSegments("topology.blockpool.csi.dev/node", NODE)
                .build();
    }

    /** CreateVolume of {@link #restore()} retried on ABORTED until it answers otherwise. */
    private csi.v1.Csi.Volume retriedUntilDone() {
        return retriedUntilDone(restore());
    }

    /** CreateVolume retried on ABORTED, as external-provisioner does, until it answers otherwise. */
    private csi.v1.Csi.Volume retriedUntilDone(CreateVolumeRequest request) {
        long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
        while (true) {
            try {
                return controller.stub().createVolume(request).getVolume();
            } catch (StatusRuntimeException e) {
                if (e.getStatus().getCode() != Status.Code.ABORTED || System.nanoTime() > end) {
                    throw e;
                }
            }
        }
    }

    @Test
    void createVolumeAnswersAbortedWhileThePullRunsThenTheVolume() throws IOException {
        String volumeId = Ids.volumeIdFor("pvc-restored-on-a");

        StatusRuntimeException running = failure(() -> controller.stub().createVolume(restore()), Status.Code.ABORTED);
        assertThat(running.getStatus().getDescription())
                .isEqualTo("restoring snapshot " + snapshot.id() + " from node " + PEER + ": 0 of " + 64 * MIB
                        + " bytes copied; the call is retried");
        failure(() -> controller.stub().createVolume(restore()), Status.Code.ABORTED);
        assertThat(peer.opens).as("a retry joins the pull under way").hasValue(1);

        peer.readsLetGo.countDown();
        csi.v1.Csi.Volume restored = retriedUntilDone();

        assertThat(restored.getVolumeId()).isEqualTo(volumeId);
        assertThat(restored.getCapacityBytes()).isEqualTo(snapshot.sizeBytes());
        assertThat(restored.getAccessibleTopologyList()).containsExactly(here());
        assertThat(restored.getContentSource().getSnapshot().getSnapshotId()).isEqualTo(snapshot.id());
        Path image = controller.pool().volumes().imagePath(volumeId);
        assertThat(Files.mismatch(image, peerPool.snapshots().imagePath(snapshot.id())))
                .isEqualTo(-1);
        assertThat(peer.bytesRead).as("only the snapshot's data crossed").hasValue(2 * MIB);
        assertThat(peer.released).containsExactly(PEER + "/" + volumeId);
        assertThat(controller.poolDir().resolve("incoming").toFile().list())
                .as("nothing of the pull left but the pool's lock of pulls")
                .containsExactly(".pulls.lock");

        assertThat(controller.stub().createVolume(restore()).getVolume()).isEqualTo(restored);
        assertThat(peer.opens)
                .as("the retry after the volume is made pulls nothing")
                .hasValue(1);
    }

    @Test
    void aVolumeOnAnotherNodeIsClonedFromTheCopyFrozenAtItsFirstOpen() throws IOException {
        CreateVolumeRequest clone = restore().toBuilder()
                .setName("pvc-clone-on-a")
                .setVolumeContentSource(ControllerHarness.fromVolume(peerVolume.id()))
                .build();
        Path frozen = dir.resolve("as-frozen.img");
        Files.copy(peerPool.volumes().imagePath(peerVolume.id()), frozen);

        StatusRuntimeException running = failure(() -> controller.stub().createVolume(clone), Status.Code.ABORTED);
        try (RandomAccessFile file = new RandomAccessFile(
                peerPool.volumes().imagePath(peerVolume.id()).toFile(), "rw")) {
            file.write("written after the freeze".getBytes(StandardCharsets.UTF_8));
        }
        peer.readsLetGo.countDown();
        csi.v1.Csi.Volume cloned = retriedUntilDone(clone);

        assertThat(running.getStatus().getDescription())
                .startsWith("cloning volume " + peerVolume.id() + " from node " + PEER + ": 0 of ");
        assertThat(cloned.getContentSource().getVolume().getVolumeId()).isEqualTo(peerVolume.id());
        assertThat(Files.mismatch(controller.pool().volumes().imagePath(cloned.getVolumeId()), frozen))
                .isEqualTo(-1);
        assertThat(peerPool.root().resolve("outgoing")).as("released").isEmptyDirectory();
    }

    @Test
    void aRestoreSmallerThanItsSourceIsRefusedBeforeAnythingIsPulled() {
        CreateVolumeRequest tooSmall = restore().toBuilder()
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(32 * MIB))
                .build();

        StatusRuntimeException refused =
                failure(() -> controller.stub().createVolume(tooSmall), Status.Code.OUT_OF_RANGE);

        assertThat(refused.getStatus().getDescription())
                .isEqualTo("the source " + snapshot.id() + " is " + 64 * MIB + " bytes, larger than the requested "
                        + 32 * MIB + " bytes");
        assertThat(peer.released).containsExactly(PEER + "/" + Ids.volumeIdFor("pvc-restored-on-a"));
        assertThat(controller.poolDir().resolve("incoming")).isEmptyDirectory();
    }

    @Test
    void aPullThatFailsIsAnsweredWithItsErrorAndTheRetryContinuesIt() {
        peer.failingReads.set(1);
        peer.readsLetGo.countDown();
        StatusRuntimeException failed = failure(this::retriedUntilDone, Status.Code.UNAVAILABLE);
        assertThat(failed.getStatus().getDescription()).isEqualTo("node " + PEER + " does not answer");

        csi.v1.Csi.Volume restored = retriedUntilDone();

        assertThat(restored.getCapacityBytes()).isEqualTo(snapshot.sizeBytes());
        assertThat(peer.opens).hasValue(2);
        assertThat(peer.released).hasSize(1);
    }
}
