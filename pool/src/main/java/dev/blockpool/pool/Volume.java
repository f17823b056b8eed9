package dev.blockpool.pool;

import dev.blockpool.common.IoLimits;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A volume's record, as stored in {@code volumes/<id>.json} beside its image. {@code ioLimits}:
 * what its StorageClass or VolumeAttributesClass limits its pods' I/O to.
 */
public record Volume(
        String id,
        String name,
        long capacityBytes,
        String fsType,
        Allocation allocation,
        Set<AccessType> accessTypes,
        Map<String, String> parameters,
        Optional<ContentSource> source,
        Instant createdAt,
        List<Attachment> attachments,
        IoLimits ioLimits) {

    /** A volume whose I/O is not limited. */
    public Volume(
            String id,
            String name,
            long capacityBytes,
            String fsType,
            Allocation allocation,
            Set<AccessType> accessTypes,
            Map<String, String> parameters,
            Optional<ContentSource> source,
            Instant createdAt,
            List<Attachment> attachments) {
        this(
                id,
                name,
                capacityBytes,
                fsType,
                allocation,
                accessTypes,
                parameters,
                source,
                createdAt,
                attachments,
                IoLimits.NONE);
    }

    public Volume {
        accessTypes = Set.copyOf(accessTypes);
        parameters = Map.copyOf(parameters);
        attachments = List.copyOf(attachments);
    }

    public Optional<Attachment> attachmentOn(String nodeId) {
        return attachments.stream().filter(a -> a.nodeId().equals(nodeId)).findFirst();
    }

    public Volume withAttachments(List<Attachment> newAttachments) {
        return new Volume(
                id,
                name,
                capacityBytes,
                fsType,
                allocation,
                accessTypes,
                parameters,
                source,
                createdAt,
                newAttachments,
                ioLimits);
    }

    public Volume withAllocation(Allocation newAllocation) {
        return new Volume(
                id,
                name,
                capacityBytes,
                fsType,
                newAllocation,
                accessTypes,
                parameters,
                source,
                createdAt,
                attachments,
                ioLimits);
    }

    public Volume withCapacity(long newCapacityBytes) {
        return new Volume(
                id,
                name,
                newCapacityBytes,
                fsType,
                allocation,
                accessTypes,
                parameters,
                source,
                createdAt,
                attachments,
                ioLimits);
    }

    public Volume withIoLimits(IoLimits newIoLimits) {
        return new Volume(
                id,
                name,
                capacityBytes,
                fsType,
                allocation,
                accessTypes,
                parameters,
                source,
                createdAt,
                attachments,
                newIoLimits);
    }
}
