package dev.blockpool.pool;

import java.util.Map;
import java.util.Optional;
import java.util.Set;

/** What CreateVolume asks for, already validated. */
public record VolumeSpec(String name, long capacityBytes, String fsType, Allocation allocation,
                         Set<AccessType> accessTypes, Map<String, String> parameters,
                         Optional<ContentSource> source) {

    public VolumeSpec {
        accessTypes = Set.copyOf(accessTypes);
        parameters = Map.copyOf(parameters);
    }
}
