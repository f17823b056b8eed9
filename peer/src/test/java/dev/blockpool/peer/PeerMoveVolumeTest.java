package dev.blockpool.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.StorageException;
import dev.blockpool.csi.CsiException;
import dev.blockpool.pool.AccessType;
import dev.blockpool.pool.Allocation;
import dev.blockpool.pool.Attachment;
import dev.blockpool.pool.ContentSource;
import dev.blockpool.pool.Ids;
import dev.blockpool.pool.Volume;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** What a move asks of the node it moves a volume from: the volume's record, then its retirement. */
class PeerMoveVolumeTest {

    private static final Volume VOLUME = new Volume(
            Ids.volumeIdFor("pvc-moving"),
            "pvc-moving",
            64L << 20,
            "xfs",
            Allocation.PREALLOCATED,
            Set.of(AccessType.MOUNT),
            Map.of("csi.storage.k8s.io/pvc/name", "data"),
            Optional.of(ContentSource.snapshot(Ids.snapshotIdFor("snap-1"))),
            Instant.parse("2026-11-01T10:15:30.123456789Z"),
            List.of());

    @RegisterExtension
    final TestPeers peers = new TestPeers();

    /** What holds each volume on the serving node, as its host would say. */
    private final Map<String, String> held = new ConcurrentHashMap<>();

    private final List<String> retired = new CopyOnWriteArrayList<>();
    private PeerServer servingNodeA;

    @Test
    void theVolumesRecordCrossesWholeWithWhatHoldsIt() throws Exception {
        PeerClient nodeB = clientOfServingNodeA();
        held.put(VOLUME.id(), "/dev/loop3, mounted at [/var/lib/kubelet/staging]");

        PeerClient.SourceVolume described =
                nodeB.describeVolume("node-a", VOLUME.id()).orElseThrow();

        assertThat(described.volume()).isEqualTo(VOLUME);
        assertThat(described.inUse()).contains(held.get(VOLUME.id()));
        held.clear();
        assertThat(nodeB.describeVolume("node-a", VOLUME.id()).orElseThrow().inUse())
                .isEmpty();
        assertThat(nodeB.describeVolume("node-a", Ids.volumeIdFor("pvc-elsewhere")))
                .isEmpty();
    }

    @Test
    void aRetirementIsRefusedWithTheHoldersWordsWhileTheVolumeIsInUse() throws Exception {
        PeerClient nodeB = clientOfServingNodeA();
        held.put(VOLUME.id(), "/dev/loop3, mounted at [/var/lib/kubelet/staging]");

        assertThatThrownBy(() -> nodeB.retireVolume("node-a", VOLUME.id(), "node-b"))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.PRECONDITION))
                .hasMessageContaining("node-a")
                .hasMessageContaining("/dev/loop3");
        assertThat(retired).isEmpty();

        held.clear();
        nodeB.retireVolume("node-a", VOLUME.id(), "node-b");
        assertThat(retired).containsExactly(VOLUME.id() + " to node-b");
    }

    @Test
    void onlyTheNodeAVolumeMovedToMayRetireIt() throws Exception {
        PeerClient nodeB = clientOfServingNodeA();
        PeerClient nodeC = peers.client(peers.certificates("node-c"), TestPeers.at("node-a", servingNodeA));

        assertThatThrownBy(() -> nodeC.retireVolume("node-a", VOLUME.id(), "node-b"))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.PRECONDITION))
                .hasMessageContaining("node node-c may not retire volume " + VOLUME.id());
        assertThat(retired).isEmpty();

        nodeB.retireVolume("node-a", VOLUME.id(), "node-b");
        assertThat(retired).containsExactly(VOLUME.id() + " to node-b");
    }

    /** Node a serves VOLUME (attached there: what crosses leaves that out), retiring it as the controller would. */
    private PeerClient clientOfServingNodeA() throws Exception {
        Volume attachedThere = VOLUME.withAttachments(
                List.of(new Attachment("node-a", Attachment.Access.READ_WRITE, Attachment.Sharing.SINGLE_NODE)));
        VolumeRetirer retirer = VolumeRetirer.of(volumeId -> Optional.ofNullable(held.get(volumeId)), (id, to) -> {
            if (held.containsKey(id)) {
                throw CsiException.failedPrecondition("volume %s is in use on node node-a: %s", id, held.get(id));
            }
            retired.add(id + " to " + to);
        });
        servingNodeA = peers.server(
                peers.certificates("node-a"),
                new FakeExports().holding(attachedThere),
                VolumeModifier.NONE,
                retirer,
                PeerServer.Bounds.DEFAULT,
                BandwidthLimit.unlimited());
        return peers.client(peers.certificates("node-b"), TestPeers.at("node-a", servingNodeA));
    }
}
