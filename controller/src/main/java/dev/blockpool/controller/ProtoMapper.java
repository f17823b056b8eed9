package dev.blockpool.controller;

import com.google.protobuf.Timestamp;
import csi.v1.Csi;
import csi.v1.Csi.ControllerGetVolumeResponse;
import csi.v1.Csi.CreateVolumeRequest;
import csi.v1.Csi.ListVolumesResponse;
import csi.v1.Csi.VolumeContentSource;
import dev.blockpool.csi.CsiException;
import dev.blockpool.csi.CsiKeys;
import dev.blockpool.csi.PoolScope;
import dev.blockpool.csi.RequestFields;
import dev.blockpool.pool.Attachments;
import dev.blockpool.pool.ContentSource;
import dev.blockpool.pool.Snapshot;
import dev.blockpool.pool.Volume;
import java.time.Instant;
import java.util.Optional;

/** Between the pool's records and the CSI messages. */
final class ProtoMapper {

    static Optional<ContentSource> contentSource(CreateVolumeRequest request) {
        if (!request.hasVolumeContentSource()) {
            return Optional.empty();
        }
        VolumeContentSource source = request.getVolumeContentSource();
        return switch (source.getTypeCase()) {
            case SNAPSHOT ->
                Optional.of(ContentSource.snapshot(RequestFields.id(
                        "volume_content_source.snapshot.snapshot_id",
                        source.getSnapshot().getSnapshotId())));
            case VOLUME ->
                Optional.of(ContentSource.volume(RequestFields.id(
                        "volume_content_source.volume.volume_id",
                        source.getVolume().getVolumeId())));
            case TYPE_NOT_SET ->
                throw CsiException.invalidArgument("volume_content_source names neither a snapshot nor a volume");
        };
    }

    /**
     * The CSI volume. Its accessible_topology is the pool's: none on a shared pool (a volume is
     * reachable wherever the driver runs), the node on a node-local one.
     */
    static Csi.Volume volume(Volume volume, PoolScope scope) {
        var result = Csi.Volume.newBuilder()
                .setVolumeId(volume.id())
                .setCapacityBytes(volume.capacityBytes())
                .putVolumeContext(CsiKeys.FS_TYPE, volume.fsType());
        scope.volumeTopology().ifPresent(result::addAccessibleTopology);
        volume.source().ifPresent(source -> result.setContentSource(contentSource(source)));
        return result.build();
    }

    static ListVolumesResponse.VolumeStatus listStatus(Volume volume) {
        return ListVolumesResponse.VolumeStatus.newBuilder()
                .addAllPublishedNodeIds(Attachments.nodeIds(volume))
                .build();
    }

    static ControllerGetVolumeResponse.VolumeStatus getStatus(Volume volume) {
        return ControllerGetVolumeResponse.VolumeStatus.newBuilder()
                .addAllPublishedNodeIds(Attachments.nodeIds(volume))
                .build();
    }

    /**
     * The CSI snapshot. Its accessible_topology, like a volume's, is the pool's: where a restore
     * from it is made without crossing between nodes (SNAPSHOT_ACCESSIBILITY_CONSTRAINTS).
     */
    static Csi.Snapshot snapshot(Snapshot snapshot, PoolScope scope) {
        var result = Csi.Snapshot.newBuilder()
                .setSnapshotId(snapshot.id())
                .setSourceVolumeId(snapshot.sourceVolumeId())
                .setSizeBytes(snapshot.sizeBytes())
                .setCreationTime(timestamp(snapshot.createdAt()))
                .setReadyToUse(true);
        snapshot.groupSnapshotId().ifPresent(result::setGroupSnapshotId);
        scope.volumeTopology().ifPresent(result::addAccessibleTopology);
        return result.build();
    }

    static Timestamp timestamp(Instant instant) {
        return Timestamp.newBuilder()
                .setSeconds(instant.getEpochSecond())
                .setNanos(instant.getNano())
                .build();
    }

    private static VolumeContentSource contentSource(ContentSource source) {
        var result = VolumeContentSource.newBuilder();
        if (source.kind() == ContentSource.Kind.SNAPSHOT) {
            result.setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(source.id()));
        } else {
            result.setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(source.id()));
        }
        return result.build();
    }
}
