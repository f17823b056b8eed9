package dev.blockpool.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import csi.v1.Csi.ControllerModifyVolumeResponse;
import dev.blockpool.common.StorageException;
import dev.blockpool.csi.CsiException;
import dev.blockpool.pool.ContentSource;
import io.grpc.Status;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** ControllerModifyVolume handed to the node whose pool holds the volume, and only once. */
class PeerModifyVolumeTest {

    private static final ContentSource VOLUME = ContentSource.volume("vol-1");

    @RegisterExtension
    final TestPeers peers = new TestPeers();

    @Test
    void aForwardedRequestReachesTheHoldersHookOnceAndGoesNoFurther() throws Exception {
        AtomicInteger holderCalls = new AtomicInteger();
        AtomicInteger otherCalls = new AtomicInteger();
        List<Boolean> passedOn = new CopyOnWriteArrayList<>();
        AtomicReference<PeerClient> holdersClient = new AtomicReference<>();
        AtomicReference<PeerClient> othersClient = new AtomicReference<>();
        // Each hook wired as a careless controller would: apply here, else ask the other nodes.
        PeerServer holder = peers.server(
                peers.certificates("node-b"),
                new FakeExports().holding(VOLUME, new byte[] {1}),
                request -> {
                    holderCalls.incrementAndGet();
                    passedOn.add(holdersClient.get().modifyVolume(request));
                    return ControllerModifyVolumeResponse.getDefaultInstance();
                },
                PeerServer.Bounds.DEFAULT,
                BandwidthLimit.unlimited());
        // node-c claims the volume too (a stale copy): a request passed on from node-b would reach it
        PeerServer other = peers.server(
                peers.certificates("node-c"),
                new FakeExports().holding(VOLUME, new byte[] {1}),
                request -> {
                    otherCalls.incrementAndGet();
                    passedOn.add(othersClient.get().modifyVolume(request));
                    return ControllerModifyVolumeResponse.getDefaultInstance();
                },
                PeerServer.Bounds.DEFAULT,
                BandwidthLimit.unlimited());
        PeerAddress b = TestPeers.at("node-b", holder);
        PeerAddress c = TestPeers.at("node-c", other);
        holdersClient.set(peers.client(peers.certificates("node-b"), c));
        othersClient.set(peers.client(peers.certificates("node-c"), b));
        PeerClient nodeA = peers.client(peers.certificates("node-a"), b);

        assertThat(nodeA.modifyVolume(PeerServerBoundsTest.modify("vol-1"))).isTrue();

        assertThat(holderCalls).hasValue(1);
        assertThat(otherCalls).hasValue(0);
        assertThat(passedOn).containsExactly(false); // the holder's client refused to pass it on
    }

    @Test
    void noPeerHoldingTheVolumeIsFalse() throws Exception {
        PeerServer other = peers.server("node-c", new FakeExports());
        PeerClient nodeA = peers.client(peers.certificates("node-a"), TestPeers.at("node-c", other));

        assertThat(nodeA.modifyVolume(PeerServerBoundsTest.modify("vol-1"))).isFalse();
    }

    @Test
    void theHoldersRefusalKeepsItsKindAndWords() throws Exception {
        PeerServer holder = peers.server(
                peers.certificates("node-b"),
                new FakeExports().holding(VOLUME, new byte[] {1}),
                request -> {
                    throw new CsiException(Status.Code.INVALID_ARGUMENT, "allocation must be sparse or preallocated");
                },
                PeerServer.Bounds.DEFAULT,
                BandwidthLimit.unlimited());
        PeerClient nodeA = peers.client(peers.certificates("node-a"), TestPeers.at("node-b", holder));

        assertThatThrownBy(() -> nodeA.modifyVolume(PeerServerBoundsTest.modify("vol-1")))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.INVALID))
                .hasMessageContaining("node-b")
                .hasMessageContaining("allocation must be sparse or preallocated");
    }
}
