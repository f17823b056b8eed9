package dev.blockpool.peer;

import csi.v1.Csi.ControllerModifyVolumeRequest;
import dev.blockpool.common.StorageException;
import dev.blockpool.controller.OtherNodes;
import dev.blockpool.peer.v1.DescribeVolumeRequest;
import dev.blockpool.peer.v1.DescribeVolumeResponse;
import dev.blockpool.peer.v1.LocateRequest;
import dev.blockpool.peer.v1.LocateResponse;
import dev.blockpool.peer.v1.OpenRequest;
import dev.blockpool.peer.v1.OpenResponse;
import dev.blockpool.peer.v1.PeerGrpc;
import dev.blockpool.peer.v1.ReleaseRequest;
import dev.blockpool.peer.v1.RetireVolumeRequest;
import dev.blockpool.peer.v1.Transfer;
import dev.blockpool.pool.ContentSource;
import dev.blockpool.pool.Volume;
import dev.blockpool.pool.transfer.ImageReader;
import dev.blockpool.pool.transfer.MovedVolumeRecords;
import dev.blockpool.pool.transfer.RemoteImage;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The other nodes' pools over the peer channel. A source is looked for on every peer at once
 * ({@link PeerDirectory}), each asked with a deadline; the first that holds it serves it. When no
 * peer holds it but some could not be asked, the answer is UNAVAILABLE, not "nowhere": the source
 * may be on a node that did not answer. One channel per peer, kept until {@link #close}.
 */
public final class PeerClient implements OtherNodes, AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(PeerClient.class);

    /** How long a peer has to say whether it holds a source. */
    static final Duration LOCATE_DEADLINE = Duration.ofSeconds(5);
    /** How long any other call may take: a read paced by a busy server's bandwidth limit included. */
    static final Duration CALL_DEADLINE = Duration.ofSeconds(60);

    /**
     * How many bytes a peer may send before this client has taken them: several chunks. gRPC's
     * default of 1 MiB is less than one chunk with its message's framing, so the sender would wait
     * for a window update in the middle of every chunk.
     */
    static final int FLOW_CONTROL_WINDOW = 4 * ImageReader.MAX_CHUNK_BYTES;

    private final NodeCertificates certificates;
    private final PeerDirectory directory;
    private final Map<PeerAddress, ManagedChannel> channels = new ConcurrentHashMap<>();

    public PeerClient(NodeCertificates certificates, PeerDirectory directory) {
        this.certificates = certificates;
        this.directory = directory;
    }

    /**
     * The source's image opened for {@code transferId} on the peer that holds it, with {@code
     * basis} (the identity of an earlier transfer's image) when the destination holds one: a
     * {@link PeerImage}.
     */
    @Override
    public Optional<RemoteImage> open(ContentSource source, String transferId, Optional<String> basis) {
        Optional<PeerAddress> holder = locate(source);
        if (holder.isEmpty()) {
            return Optional.empty();
        }
        PeerAddress peer = holder.get();
        Transfer transfer = Wire.transfer(source, transferId, basis);
        try {
            OpenResponse opened = stub(peer)
                    .withDeadlineAfter(CALL_DEADLINE.toMillis(), TimeUnit.MILLISECONDS)
                    .open(OpenRequest.newBuilder().setTransfer(transfer).build());
            Optional<String> sentBasis =
                    opened.hasBasis() ? Optional.of(Wire.id("basis", opened.getBasis())) : Optional.empty();
            return Optional.of(new PeerImage(
                    peer,
                    stub(peer),
                    CALL_DEADLINE,
                    transfer,
                    opened.getSizeBytes(),
                    opened.getIdentity(),
                    sentBasis,
                    this));
        } catch (StatusRuntimeException e) {
            throw PeerFailures.of(e, peer, "opening " + Wire.describe(source) + " for transfer " + transferId);
        }
    }

    /**
     * Hands the request to the peer whose pool holds the volume. Never while serving a peer's own
     * call: a request forwarded here is this node's to apply or refuse, not to pass on.
     */
    @Override
    public boolean modifyVolume(ControllerModifyVolumeRequest request) {
        if (PeerCalls.servingAPeer()) {
            return false;
        }
        ContentSource volume = ContentSource.volume(request.getVolumeId());
        Optional<PeerAddress> holder = locate(volume);
        if (holder.isEmpty()) {
            return false;
        }
        try {
            stub(holder.get())
                    .withDeadlineAfter(CALL_DEADLINE.toMillis(), TimeUnit.MILLISECONDS)
                    .modifyVolume(request);
            return true;
        } catch (StatusRuntimeException e) {
            throw PeerFailures.of(e, holder.get(), "modifying volume " + request.getVolumeId());
        }
    }

    /**
     * Ends the transfer {@code transferId} on {@code node}, as {@link PeerImage#release} does, for
     * a destination that no longer has the image it read (after a restart).
     */
    @Override
    public void release(String node, String transferId) {
        release(peerNamed(node, "release transfer " + transferId), transferId);
    }

    /** A volume of another node's pool as a move reads it: its record, and what holds it there. */
    public record SourceVolume(Volume volume, Optional<String> inUse) {}

    /** The volume {@code volumeId} in {@code node}'s pool; empty when that pool holds none of that ID. */
    public Optional<SourceVolume> describeVolume(String node, String volumeId) {
        PeerAddress peer = peerNamed(node, "describe volume " + volumeId);
        DescribeVolumeResponse described;
        try {
            described = stub(peer)
                    .withDeadlineAfter(CALL_DEADLINE.toMillis(), TimeUnit.MILLISECONDS)
                    .describeVolume(DescribeVolumeRequest.newBuilder()
                            .setVolumeId(volumeId)
                            .build());
        } catch (StatusRuntimeException e) {
            throw PeerFailures.of(e, peer, "describing volume " + volumeId);
        }
        if (!described.getFound()) {
            return Optional.empty();
        }
        Volume volume =
                MovedVolumeRecords.decode(node, volumeId, described.getRecord().toByteArray());
        String inUse = described.getInUse();
        return Optional.of(new SourceVolume(volume, inUse.isEmpty() ? Optional.empty() : Optional.of(inUse)));
    }

    /**
     * Has {@code node} delete its copy of {@code volumeId}, which this node, {@code movedToNode},
     * has committed: FAILED_PRECONDITION while the volume is in use there; nothing when it is gone.
     */
    public void retireVolume(String node, String volumeId, String movedToNode) {
        PeerAddress peer = peerNamed(node, "retire volume " + volumeId);
        try {
            stub(peer)
                    .withDeadlineAfter(CALL_DEADLINE.toMillis(), TimeUnit.MILLISECONDS)
                    .retireVolume(RetireVolumeRequest.newBuilder()
                            .setVolumeId(volumeId)
                            .setMovedToNode(movedToNode)
                            .build());
        } catch (StatusRuntimeException e) {
            throw PeerFailures.of(e, peer, "retiring volume " + volumeId);
        }
    }

    /** The peer of node {@code node}; UNAVAILABLE, saying to {@code doing} later, when it is not among them now. */
    private PeerAddress peerNamed(String node, String doing) {
        return directory.peers().stream()
                .filter(candidate -> candidate.node().equals(node))
                .findFirst()
                .orElseThrow(() -> StorageException.unavailable(
                        "node %s is not among this node's peers now: %s there later", node, doing));
    }

    /** Ends the transfer {@code transferId} on {@code peer}. */
    void release(PeerAddress peer, String transferId) {
        try {
            stub(peer)
                    .withDeadlineAfter(CALL_DEADLINE.toMillis(), TimeUnit.MILLISECONDS)
                    .release(ReleaseRequest.newBuilder()
                            .setTransferId(transferId)
                            .build());
        } catch (StatusRuntimeException e) {
            throw PeerFailures.of(e, peer, "releasing transfer " + transferId);
        }
    }

    /** The peer whose pool holds {@code source}: every peer asked at once, the first to say yes. */
    private Optional<PeerAddress> locate(ContentSource source) {
        List<PeerAddress> peers = directory.peers();
        LocateRequest request =
                LocateRequest.newBuilder().setSource(Wire.source(source)).build();
        BlockingQueue<Answer> answers = new LinkedBlockingQueue<>();
        for (PeerAddress peer : peers) {
            PeerGrpc.newStub(channel(peer))
                    .withDeadlineAfter(LOCATE_DEADLINE.toMillis(), TimeUnit.MILLISECONDS)
                    .locate(request, new StreamObserver<>() {
                        @Override
                        public void onNext(LocateResponse response) {
                            answers.add(new Answer(peer, response.getFound(), null));
                        }

                        @Override
                        public void onError(Throwable failure) {
                            answers.add(new Answer(peer, false, failure));
                        }

                        @Override
                        public void onCompleted() {}
                    });
        }
        List<String> unanswered = new ArrayList<>();
        int read = 0;
        while (read < peers.size()) {
            Answer answer;
            try {
                // every call ends by its deadline; the wait's own bound is only a safety net
                answer = answers.poll(LOCATE_DEADLINE.toMillis() + 1000, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw StorageException.busy("looking for %s on the other nodes: interrupted", Wire.describe(source));
            }
            if (answer == null) {
                unanswered.add((peers.size() - read) + " that did not answer in time");
                break;
            }
            read++;
            if (answer.found()) {
                return Optional.of(answer.peer());
            }
            if (answer.failure() != null) {
                unanswered.add(answer.peer() + " (" + PeerFailures.said(answer.failure()) + ")");
            }
        }
        if (!unanswered.isEmpty()) {
            throw StorageException.unavailable(
                    "no node that answered holds %s, and these could not be asked: %s; retry later",
                    Wire.describe(source), String.join(", ", unanswered));
        }
        return Optional.empty();
    }

    private record Answer(PeerAddress peer, boolean found, Throwable failure) {}

    /** A stub on the channel to {@code peer}, which the client keeps until its close. */
    PeerGrpc.PeerBlockingStub stub(PeerAddress peer) {
        return PeerGrpc.newBlockingStub(channel(peer));
    }

    private ManagedChannel channel(PeerAddress peer) {
        return channels.computeIfAbsent(peer, this::connect);
    }

    private ManagedChannel connect(PeerAddress peer) {
        try {
            return NettyChannelBuilder.forAddress(peer.host(), peer.port())
                    .sslContext(PeerTls.client(certificates, peer.node()))
                    // a chunk and its message's framing
                    .maxInboundMessageSize(ImageReader.MAX_CHUNK_BYTES + (64 << 10))
                    .flowControlWindow(FLOW_CONTROL_WINDOW)
                    .build();
        } catch (SSLException e) {
            throw StorageException.internal(e, "cannot set up TLS to node %s: %s", peer, e.getMessage());
        }
    }

    @Override
    public void close() {
        channels.values().forEach(ManagedChannel::shutdownNow);
        for (ManagedChannel channel : channels.values()) {
            try {
                channel.awaitTermination(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        log.debug("closed the channels to {} peer(s)", channels.size());
        channels.clear();
    }
}
