package dev.blockpool.peer;

import com.google.protobuf.ByteString;
import csi.v1.Csi.ControllerModifyVolumeRequest;
import csi.v1.Csi.ControllerModifyVolumeResponse;
import dev.blockpool.csi.CsiException;
import dev.blockpool.peer.v1.DescribeVolumeRequest;
import dev.blockpool.peer.v1.DescribeVolumeResponse;
import dev.blockpool.peer.v1.LocateRequest;
import dev.blockpool.peer.v1.LocateResponse;
import dev.blockpool.peer.v1.OpenRequest;
import dev.blockpool.peer.v1.OpenResponse;
import dev.blockpool.peer.v1.PeerGrpc;
import dev.blockpool.peer.v1.RangesRequest;
import dev.blockpool.peer.v1.RangesResponse;
import dev.blockpool.peer.v1.ReadRequest;
import dev.blockpool.peer.v1.ReadResponse;
import dev.blockpool.peer.v1.ReleaseRequest;
import dev.blockpool.peer.v1.ReleaseResponse;
import dev.blockpool.peer.v1.RetireVolumeRequest;
import dev.blockpool.peer.v1.RetireVolumeResponse;
import dev.blockpool.peer.v1.Transfer;
import dev.blockpool.pool.ContentSource;
import dev.blockpool.pool.Volume;
import dev.blockpool.pool.transfer.Chunk;
import dev.blockpool.pool.transfer.ImageExports;
import dev.blockpool.pool.transfer.ImageReader;
import dev.blockpool.pool.transfer.MovedVolumeRecords;
import io.grpc.stub.StreamObserver;
import java.util.Optional;

/**
 * The Peer service over this node's pool: each call checks its request, then runs on {@link
 * PeerCalls}. A transfer's image is opened again for every call (its frozen copy stays until
 * Release), so the server keeps nothing for a client between calls.
 */
final class PeerService extends PeerGrpc.PeerImplBase {

    private final ImageExports exports;
    private final VolumeModifier modifier;
    private final VolumeRetirer retirer;
    private final PeerCalls calls;
    private final BandwidthLimit bandwidth;

    PeerService(
            ImageExports exports,
            VolumeModifier modifier,
            VolumeRetirer retirer,
            PeerCalls calls,
            BandwidthLimit bandwidth) {
        this.exports = exports;
        this.modifier = modifier;
        this.retirer = retirer;
        this.calls = calls;
        this.bandwidth = bandwidth;
    }

    @Override
    public void locate(LocateRequest request, StreamObserver<LocateResponse> observer) {
        calls.run(PeerGrpc.getLocateMethod().getFullMethodName(), observer, () -> {
            Optional<Long> size = exports.find(Wire.source(request.getSource()));
            return LocateResponse.newBuilder()
                    .setFound(size.isPresent())
                    .setSizeBytes(size.orElse(0L))
                    .build();
        });
    }

    @Override
    public void open(OpenRequest request, StreamObserver<OpenResponse> observer) {
        calls.run(PeerGrpc.getOpenMethod().getFullMethodName(), observer, () -> {
            try (ImageReader reader = open(request.getTransfer())) {
                OpenResponse.Builder response = OpenResponse.newBuilder()
                        .setSizeBytes(reader.sizeBytes())
                        .setIdentity(reader.identity());
                reader.basis().ifPresent(response::setBasis);
                return response.build();
            }
        });
    }

    @Override
    public void ranges(RangesRequest request, StreamObserver<RangesResponse> observer) {
        calls.run(PeerGrpc.getRangesMethod().getFullMethodName(), observer, () -> {
            if (request.getMax() < 1 || request.getMax() > Wire.MOST_RANGES) {
                throw CsiException.invalidArgument("ask for 1 to %d ranges at a time", Wire.MOST_RANGES);
            }
            try (ImageReader reader = openAsBefore(request.getTransfer(), request.getIdentity())) {
                RangesResponse.Builder response = RangesResponse.newBuilder();
                reader.ranges(request.getFrom(), request.getMax())
                        .forEach(range -> response.addRanges(Wire.range(range)));
                return response.build();
            }
        });
    }

    @Override
    public void read(ReadRequest request, StreamObserver<ReadResponse> observer) {
        calls.run(PeerGrpc.getReadMethod().getFullMethodName(), observer, () -> {
            int length = request.getLength();
            if (length < 1 || length > ImageReader.MAX_CHUNK_BYTES) {
                throw CsiException.invalidArgument("read 1 to %d bytes at a time", ImageReader.MAX_CHUNK_BYTES);
            }
            try (ImageReader reader = openAsBefore(request.getTransfer(), request.getIdentity())) {
                bandwidth.take(length);
                Chunk chunk = reader.read(request.getOffset(), length);
                return ReadResponse.newBuilder()
                        .setOffset(chunk.offset())
                        .setData(ByteString.copyFrom(chunk.data()))
                        .setCrc32C(chunk.crc32c())
                        .build();
            }
        });
    }

    @Override
    public void release(ReleaseRequest request, StreamObserver<ReleaseResponse> observer) {
        calls.run(PeerGrpc.getReleaseMethod().getFullMethodName(), observer, () -> {
            exports.release(Wire.id("transfer id", request.getTransferId()));
            return ReleaseResponse.getDefaultInstance();
        });
    }

    @Override
    public void modifyVolume(
            ControllerModifyVolumeRequest request, StreamObserver<ControllerModifyVolumeResponse> observer) {
        calls.run(PeerGrpc.getModifyVolumeMethod().getFullMethodName(), observer, () -> {
            Wire.id("volume id", request.getVolumeId());
            return modifier.modify(request);
        });
    }

    @Override
    public void describeVolume(DescribeVolumeRequest request, StreamObserver<DescribeVolumeResponse> observer) {
        calls.run(PeerGrpc.getDescribeVolumeMethod().getFullMethodName(), observer, () -> {
            String volumeId = Wire.id("volume id", request.getVolumeId());
            Optional<Volume> volume = exports.volume(volumeId);
            DescribeVolumeResponse.Builder response = DescribeVolumeResponse.newBuilder();
            volume.ifPresent(found -> response.setFound(true)
                    .setRecord(ByteString.copyFrom(MovedVolumeRecords.encode(found)))
                    .setInUse(retirer.holder(volumeId).orElse("")));
            return response.build();
        });
    }

    @Override
    public void retireVolume(RetireVolumeRequest request, StreamObserver<RetireVolumeResponse> observer) {
        // Read on the transport's thread, where the call's context is; the work runs on another.
        Optional<String> caller = CallerNode.current();
        calls.run(PeerGrpc.getRetireVolumeMethod().getFullMethodName(), observer, () -> {
            String volumeId = Wire.id("volume id", request.getVolumeId());
            String movedTo = Wire.id("moved-to node", request.getMovedToNode());
            // Only the node a volume moved to retires it here: no other node can have this one delete its volumes.
            if (!caller.equals(Optional.of(movedTo))) {
                throw CsiException.permissionDenied(
                        "node %s may not retire volume %s, which it says moved to node %s: only that node may",
                        caller.orElse("(unnamed)"), volumeId, movedTo);
            }
            retirer.retire(volumeId, movedTo);
            return RetireVolumeResponse.getDefaultInstance();
        });
    }

    private ImageReader open(Transfer transfer) {
        ContentSource source = Wire.source(transfer.getSource());
        return exports.open(source, Wire.transferId(transfer), Wire.basis(transfer));
    }

    /** The transfer's image, which must be the one its Open answered. */
    private ImageReader openAsBefore(Transfer transfer, String identity) {
        ImageReader reader = open(transfer);
        if (!reader.identity().equals(identity)) {
            reader.close();
            throw CsiException.failedPrecondition(
                    "the image of %s for transfer %s is no longer the one the transfer opened: start the transfer over",
                    Wire.describe(Wire.source(transfer.getSource())), transfer.getTransferId());
        }
        return reader;
    }
}
