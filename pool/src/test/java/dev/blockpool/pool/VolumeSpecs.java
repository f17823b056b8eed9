package dev.blockpool.pool;

import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The volumes tests ask the pool for: what CreateVolume passes down for a claim of a name and a
 * size, ext4 where it is mounted, with no parameters and no content source. A test that is about
 * one of those asks for it with {@link VolumeSpec}'s own constructor.
 */
public final class VolumeSpecs {

    private VolumeSpecs() {}

    /** A sparse volume of {@code bytes}, to be mounted. */
    public static VolumeSpec sparse(String name, long bytes) {
        return of(name, bytes, Allocation.SPARSE, AccessType.MOUNT);
    }

    /** A volume of {@code bytes}, allocated so and used as {@code type}. */
    public static VolumeSpec of(String name, long bytes, Allocation allocation, AccessType type) {
        return new VolumeSpec(name, bytes, "ext4", allocation, Set.of(type), Map.of(), Optional.empty());
    }
}
