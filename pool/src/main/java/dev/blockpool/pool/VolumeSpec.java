package dev.blockpool.pool;

import dev.blockpool.common.IoLimits;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * What CreateVolume asks for, already validated: the size to provision and the largest size the
 * request accepts ({@code limitBytes}, 0 for no limit), which an existing volume of the same name
 * may have grown to since (a retried request is still satisfied by it); and what its pods' I/O
 * is limited to.
 */
public record VolumeSpec(
        String name,
        long capacityBytes,
        String fsType,
        Allocation allocation,
        Set<AccessType> accessTypes,
        Map<String, String> parameters,
        Optional<ContentSource> source,
        long limitBytes,
        IoLimits ioLimits) {

    public VolumeSpec {
        accessTypes = Set.copyOf(accessTypes);
        parameters = Map.copyOf(parameters);
    }

    /** A request whose I/O is not limited. */
    public VolumeSpec(
            String name,
            long capacityBytes,
            String fsType,
            Allocation allocation,
            Set<AccessType> accessTypes,
            Map<String, String> parameters,
            Optional<ContentSource> source,
            long limitBytes) {
        this(name, capacityBytes, fsType, allocation, accessTypes, parameters, source, limitBytes, IoLimits.NONE);
    }

    /** A request for exactly {@code capacityBytes}, or more. */
    public VolumeSpec(
            String name,
            long capacityBytes,
            String fsType,
            Allocation allocation,
            Set<AccessType> accessTypes,
            Map<String, String> parameters,
            Optional<ContentSource> source) {
        this(name, capacityBytes, fsType, allocation, accessTypes, parameters, source, 0);
    }

    /** Whether a volume of {@code bytes} satisfies this request. */
    public boolean accepts(long bytes) {
        return bytes >= capacityBytes && (limitBytes == 0 || bytes <= limitBytes);
    }
}
