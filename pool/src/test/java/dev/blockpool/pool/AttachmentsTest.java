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
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AttachmentsTest {

    @TempDir
    Path root;

    private Pool pool;
    private String volumeId;

    @BeforeEach
    void setUp() {
        pool = Pool.open(root, new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO);
        pool.nodes().register(new NodeRecord("node-1", 8, Map.of()));
        pool.nodes().register(new NodeRecord("node-2", 8, Map.of()));
        volumeId = pool.volumes().create(new VolumeSpec("pvc", 1 << 20, "ext4", Allocation.SPARSE,
                Set.of(AccessType.MOUNT), Map.of(), Optional.empty())).id();
    }

    private static void assertKind(Kind kind, Runnable call) {
        assertThatThrownBy(call::run).isInstanceOfSatisfying(StorageException.class,
                e -> assertThat(e.kind()).isEqualTo(kind));
    }

    @Test
    void concurrentAttachesToOneNodeStopAtItsLimit() throws Exception {
        pool.nodes().register(new NodeRecord("small-node", 3, Map.of()));
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            ids.add(pool.volumes().create(new VolumeSpec("pvc-" + i, 1 << 20, "ext4", Allocation.SPARSE,
                    Set.of(AccessType.MOUNT), Map.of(), Optional.empty())).id());
        }
        CountDownLatch start = new CountDownLatch(1);
        List<Future<Boolean>> results = new ArrayList<>();
        try (ExecutorService threads = Executors.newFixedThreadPool(8)) {
            for (String id : ids) {
                results.add(threads.submit(() -> {
                    start.await();
                    try {
                        pool.attachments().attach(id, "small-node", false, true);
                        return true;
                    } catch (StorageException e) {
                        assertThat(e.kind()).isEqualTo(Kind.EXHAUSTED);
                        return false;
                    }
                }));
            }
            start.countDown();
        }
        long attached = 0;
        for (Future<Boolean> result : results) {
            attached += result.get() ? 1 : 0;
        }
        assertThat(attached).isEqualTo(3);
        assertThat(pool.volumes().list()).filteredOn(v -> v.attachmentOn("small-node").isPresent()).hasSize(3);
    }

    /**
     * Two pools opened on one directory stand for two processes sharing it (a controller and
     * another one, or on two hosts): neither has the other's locks in memory. Each round, both
     * attach one volume to their own node at once; neither attachment may be lost to the other's
     * write of the record.
     */
    @Test
    void concurrentAttachesFromTwoProcessesLoseNoAttachment() throws Exception {
        Pool other = Pool.open(root, new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO);
        pool.nodes().register(new NodeRecord("node-a", 100, Map.of()));
        pool.nodes().register(new NodeRecord("node-b", 100, Map.of()));
        CyclicBarrier together = new CyclicBarrier(2);
        try (ExecutorService threads = Executors.newFixedThreadPool(2)) {
            for (int round = 0; round < 20; round++) {
                String id = pool.volumes().create(new VolumeSpec("shared-" + round, 1 << 20, "ext4",
                        Allocation.SPARSE, Set.of(AccessType.MOUNT), Map.of(), Optional.empty())).id();
                Future<?> first = threads.submit(() -> {
                    together.await();
                    return pool.attachments().attach(id, "node-a", true, false);
                });
                Future<?> second = threads.submit(() -> {
                    together.await();
                    return other.attachments().attach(id, "node-b", true, false);
                });
                first.get();
                second.get();
                assertThat(Attachments.nodeIds(pool.volumes().get(id))).as("round %d", round)
                        .containsExactlyInAnyOrder("node-a", "node-b");
            }
        }
    }

    @Test
    void attachmentsRecordTheirAccessModeDurably() {
        pool.attachments().attach(volumeId, "node-1", true, false);
        Pool reopened = Pool.open(root, new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO);
        assertThat(reopened.volumes().get(volumeId).attachments())
                .containsExactly(new Attachment("node-1", true, true));
    }

    @Test
    void aSingleNodeAttachmentKeepsEveryOtherNodeOut() {
        pool.attachments().attach(volumeId, "node-1", false, true);
        assertKind(Kind.PRECONDITION, () -> pool.attachments().attach(volumeId, "node-2", true, false));
        assertKind(Kind.PRECONDITION, () -> pool.attachments().attach(volumeId, "node-2", false, true));
        pool.attachments().detach(volumeId, Optional.of("node-1"));
        pool.attachments().attach(volumeId, "node-2", false, true);
    }

    @Test
    void multiNodeAttachmentsAdmitMoreMultiNodeAttachmentsOnly() {
        pool.attachments().attach(volumeId, "node-1", true, false);
        pool.attachments().attach(volumeId, "node-2", true, false);
        pool.nodes().register(new NodeRecord("node-3", 8, Map.of()));
        assertKind(Kind.PRECONDITION, () -> pool.attachments().attach(volumeId, "node-3", false, true));
        assertThat(Attachments.nodeIds(pool.volumes().get(volumeId))).containsExactly("node-1", "node-2");
    }

    @Test
    void anAttachmentRecordWrittenWithoutItsAccessModeCountsAsSingleNode() throws IOException {
        pool.attachments().attach(volumeId, "node-1", true, false);
        Path metadata = root.resolve("volumes").resolve(volumeId + ".json");
        String json = Files.readString(metadata);
        assertThat(json).contains("\"multiNode\" : true");
        Files.writeString(metadata, json.replace(",\n    \"multiNode\" : true", ""));
        assertThat(Files.readString(metadata)).doesNotContain("multiNode");

        assertThat(pool.volumes().get(volumeId).attachments()).containsExactly(new Attachment("node-1", true, false));
        assertKind(Kind.PRECONDITION, () -> pool.attachments().attach(volumeId, "node-2", true, false));
    }

    @Test
    void unknownNodesAndVolumesAreNotFound() {
        assertKind(Kind.NOT_FOUND, () -> pool.attachments().attach(volumeId, "node-9", false, true));
        assertKind(Kind.NOT_FOUND, () -> pool.attachments().attach(Ids.volumeIdFor("x"), "node-1", false,
                true));
        pool.attachments().detach(Ids.volumeIdFor("x"), Optional.of("node-1"));
        pool.attachments().detach("../../x", Optional.empty());
    }
}
