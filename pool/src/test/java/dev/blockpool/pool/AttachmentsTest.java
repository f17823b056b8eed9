package dev.blockpool.pool;

import static dev.blockpool.pool.Attachment.Access.READ_ONLY;
import static dev.blockpool.pool.Attachment.Access.READ_WRITE;
import static dev.blockpool.pool.Attachment.Sharing.MULTI_NODE;
import static dev.blockpool.pool.Attachment.Sharing.SINGLE_NODE;
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
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
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
        volumeId = pool.volumes().create(VolumeSpecs.sparse("pvc", 1 << 20)).id();
    }

    private static void assertKind(Kind kind, Runnable call) {
        assertThatThrownBy(call::run)
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(kind));
    }

    @Test
    void concurrentAttachesToOneNodeStopAtItsLimit() throws Exception {
        pool.nodes().register(new NodeRecord("small-node", 3, Map.of()));
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            ids.add(pool.volumes()
                    .create(VolumeSpecs.sparse("pvc-" + i, 1 << 20))
                    .id());
        }
        CountDownLatch start = new CountDownLatch(1);
        List<Future<Boolean>> results = new ArrayList<>();
        try (ExecutorService threads = Executors.newFixedThreadPool(8)) {
            for (String id : ids) {
                results.add(threads.submit(() -> {
                    start.await();
                    try {
                        pool.attachments().attach(id, "small-node", READ_WRITE, SINGLE_NODE);
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
        assertThat(pool.volumes().list())
                .filteredOn(v -> v.attachmentOn("small-node").isPresent())
                .hasSize(3);
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
                String id = pool.volumes()
                        .create(VolumeSpecs.sparse("shared-" + round, 1 << 20))
                        .id();
                Future<?> first = threads.submit(() -> {
                    together.await();
                    return pool.attachments().attach(id, "node-a", READ_ONLY, MULTI_NODE);
                });
                Future<?> second = threads.submit(() -> {
                    together.await();
                    return other.attachments().attach(id, "node-b", READ_ONLY, MULTI_NODE);
                });
                first.get();
                second.get();
                assertThat(Attachments.nodeIds(pool.volumes().get(id)))
                        .as("round %d", round)
                        .containsExactlyInAnyOrder("node-a", "node-b");
            }
        }
    }

    @Test
    void attachmentsRecordTheirAccessModeDurably() {
        pool.attachments().attach(volumeId, "node-1", READ_ONLY, MULTI_NODE);
        Pool reopened = Pool.open(root, new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO);
        assertThat(reopened.volumes().get(volumeId).attachments())
                .containsExactly(new Attachment("node-1", READ_ONLY, MULTI_NODE));
    }

    @Test
    void aSingleNodeAttachmentKeepsEveryOtherNodeOut() {
        pool.attachments().attach(volumeId, "node-1", READ_WRITE, SINGLE_NODE);
        assertKind(Kind.PRECONDITION, () -> pool.attachments().attach(volumeId, "node-2", READ_ONLY, MULTI_NODE));
        assertKind(Kind.PRECONDITION, () -> pool.attachments().attach(volumeId, "node-2", READ_WRITE, SINGLE_NODE));
        pool.attachments().detach(volumeId, Optional.of("node-1"));
        pool.attachments().attach(volumeId, "node-2", READ_WRITE, SINGLE_NODE);
    }

    @Test
    void multiNodeAttachmentsAdmitMoreMultiNodeAttachmentsOnly() {
        pool.attachments().attach(volumeId, "node-1", READ_ONLY, MULTI_NODE);
        pool.attachments().attach(volumeId, "node-2", READ_ONLY, MULTI_NODE);
        pool.nodes().register(new NodeRecord("node-3", 8, Map.of()));
        assertKind(Kind.PRECONDITION, () -> pool.attachments().attach(volumeId, "node-3", READ_WRITE, SINGLE_NODE));
        assertThat(Attachments.nodeIds(pool.volumes().get(volumeId))).containsExactly("node-1", "node-2");
    }

    @Test
    void anAttachmentRecordWrittenWithoutItsAccessModeCountsAsSingleNode() throws IOException {
        pool.attachments().attach(volumeId, "node-1", READ_ONLY, MULTI_NODE);
        Path metadata = root.resolve("volumes").resolve(volumeId + ".json");
        String json = Files.readString(metadata);
        assertThat(json).contains("\"multiNode\" : true");
        Files.writeString(metadata, json.replace(",\n    \"multiNode\" : true", ""));
        assertThat(Files.readString(metadata)).doesNotContain("multiNode");

        assertThat(pool.volumes().get(volumeId).attachments())
                .containsExactly(new Attachment("node-1", READ_ONLY, SINGLE_NODE));
        assertKind(Kind.PRECONDITION, () -> pool.attachments().attach(volumeId, "node-2", READ_ONLY, MULTI_NODE));
    }

    @Test
    void unknownNodesAndVolumesAreNotFound() {
        assertKind(Kind.NOT_FOUND, () -> pool.attachments().attach(volumeId, "node-9", READ_WRITE, SINGLE_NODE));
        assertKind(
                Kind.NOT_FOUND,
                () -> pool.attachments().attach(Ids.volumeIdFor("x"), "node-1", READ_WRITE, SINGLE_NODE));
        pool.attachments().detach(Ids.volumeIdFor("x"), Optional.of("node-1"));
        pool.attachments().detach("../../x", Optional.empty());
    }

    private List<String> volumes(String prefix, int count) {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            ids.add(pool.volumes()
                    .create(VolumeSpecs.sparse(prefix + i, 1 << 20))
                    .id());
        }
        return ids;
    }

    private Path marker(String nodeId, String volume) {
        return root.resolve(AttachmentIndex.DIRECTORY).resolve(nodeId).resolve(volume);
    }

    @Test
    void aVolumeWhoseRecordCannotBeReadStillCountsAgainstItsNodesLimit() throws IOException {
        pool.nodes().register(new NodeRecord("small-node", 2, Map.of()));
        List<String> ids = volumes("limit-", 3);
        pool.attachments().attach(ids.get(0), "small-node", READ_WRITE, SINGLE_NODE);
        pool.attachments().attach(ids.get(1), "small-node", READ_WRITE, SINGLE_NODE);
        // a damaged record: the listing leaves it out, but the node still has that volume attached
        Files.writeString(root.resolve("volumes").resolve(ids.get(0) + ".json"), "{ not json");

        assertKind(Kind.EXHAUSTED, () -> pool.attachments().attach(ids.get(2), "small-node", READ_WRITE, SINGLE_NODE));
    }

    @Test
    void aMarkerAnInterruptedAttachLeftNeitherCountsNorStays() throws IOException {
        pool.nodes().register(new NodeRecord("small-node", 1, Map.of()));
        List<String> ids = volumes("crash-", 2);
        pool.attachments().attach(ids.get(0), "small-node", READ_WRITE, SINGLE_NODE);
        pool.attachments().detach(ids.get(0), Optional.of("small-node"));
        // the marker made, then a crash before the record said attached
        Files.createFile(marker("small-node", ids.get(0)));

        pool.attachments().attach(ids.get(1), "small-node", READ_WRITE, SINGLE_NODE);
        assertThat(marker("small-node", ids.get(0))).doesNotExist();
        assertThat(marker("small-node", ids.get(1))).exists();
    }

    @Test
    void aPoolIndexedByNoDriverYetIsIndexedByItsFirstAttach() throws IOException {
        pool.nodes().register(new NodeRecord("small-node", 2, Map.of()));
        List<String> ids = volumes("old-", 3);
        pool.attachments().attach(ids.get(0), "small-node", READ_WRITE, SINGLE_NODE);
        pool.attachments().attach(ids.get(1), "small-node", READ_WRITE, SINGLE_NODE);
        // as an earlier driver left the pool: attachments in the records only
        try (var files = Files.walk(root.resolve(AttachmentIndex.DIRECTORY))) {
            files.sorted(java.util.Comparator.reverseOrder())
                    .forEach(f -> f.toFile().delete());
        }

        assertKind(Kind.EXHAUSTED, () -> pool.attachments().attach(ids.get(2), "small-node", READ_WRITE, SINGLE_NODE));
        assertThat(marker("small-node", ids.get(0))).exists();
        assertThat(marker("small-node", ids.get(1))).exists();
    }

    @Test
    void detachingRemovesTheMarkersAndTheReindexMakesTheIndexMatchTheRecords() throws IOException {
        pool.attachments().attach(volumeId, "node-1", READ_ONLY, MULTI_NODE);
        pool.attachments().attach(volumeId, "node-2", READ_ONLY, MULTI_NODE);
        assertThat(marker("node-1", volumeId)).exists();
        pool.attachments().detach(volumeId, Optional.empty());
        assertThat(marker("node-1", volumeId)).doesNotExist();
        assertThat(marker("node-2", volumeId)).doesNotExist();

        pool.attachments().attach(volumeId, "node-1", READ_ONLY, MULTI_NODE);
        Files.delete(marker("node-1", volumeId));
        Files.createFile(marker("node-2", volumeId).resolveSibling(Ids.volumeIdFor("gone")));
        pool.attachments().reindex();
        assertThat(marker("node-1", volumeId)).exists();
        assertThat(marker("node-2", Ids.volumeIdFor("gone"))).doesNotExist();
    }
}
