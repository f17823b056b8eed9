package dev.blockpool.pool.transfer;

import dev.blockpool.common.StorageException;
import dev.blockpool.pool.RecordCodecs;
import dev.blockpool.pool.Volume;
import dev.blockpool.pool.records.RecordFormat;
import java.nio.file.Path;
import java.util.List;

/**
 * A volume's record as the peer channel carries it to the node it moves to: in the pool's own
 * record format ({@code volumes/<id>.json}), so that the destination recreates every field as
 * the source stored it, and a driver too old for a newer record refuses it as it would on disk.
 * Attachments are the source node's, and never cross.
 */
public final class MovedVolumeRecords {

    private MovedVolumeRecords() {}

    public static byte[] encode(Volume volume) {
        return RecordFormat.encode(recordOf(volume.id()), volume.withAttachments(List.of()), RecordCodecs.VOLUME);
    }

    /** The record {@code node} sent for {@code volumeId}; INTERNAL when it is unreadable or of another volume. */
    public static Volume decode(String node, String volumeId, byte[] content) {
        Volume volume =
                RecordFormat.decode(Path.of("node-" + node).resolve(recordOf(volumeId)), content, RecordCodecs.VOLUME);
        if (!volume.id().equals(volumeId)) {
            throw StorageException.internal(
                    "node %s sent the record of volume %s when asked for volume %s; look at the driver's log on node %s",
                    node, volume.id(), volumeId, node);
        }
        return volume;
    }

    private static Path recordOf(String volumeId) {
        return Path.of("volumes", TransferIds.requireVolumeId(volumeId) + ".json");
    }
}
