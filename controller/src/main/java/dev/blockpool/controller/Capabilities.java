package dev.blockpool.controller;

import csi.v1.Csi.VolumeCapability;
import dev.blockpool.common.FsType;
import dev.blockpool.csi.Capability;
import dev.blockpool.csi.CsiException;
import dev.blockpool.pool.AccessType;
import dev.blockpool.pool.Volume;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/** The controller's questions about a request's volume capabilities, parsed by {@link Capability}. */
final class Capabilities {

    private Capabilities() {}

    /** Why {@code capability} does not fit this existing volume, or empty when it does. */
    static Optional<String> unsupported(VolumeCapability capability, Volume volume) {
        return Capability.problem(capability).or(() -> {
            Optional<FsType> asked = Capability.parseServed(capability).fsType();
            return asked.isEmpty() || asked.get().fsName().equals(volume.fsType())
                    ? Optional.empty()
                    : Optional.of("volume " + volume.id() + " has fs type " + volume.fsType() + ", not " + asked.get());
        });
    }

    /** Parses every capability of a request; INVALID_ARGUMENT when there is none. */
    static List<Capability> require(List<VolumeCapability> capabilities) {
        if (capabilities.isEmpty()) {
            throw CsiException.invalidArgument("volume_capabilities are required");
        }
        return capabilities.stream().map(Capability::parseServed).toList();
    }

    /** The access types the capabilities ask for. */
    static Set<AccessType> accessTypes(List<Capability> capabilities) {
        Set<AccessType> types = EnumSet.noneOf(AccessType.class);
        capabilities.forEach(c -> types.add(c.block() ? AccessType.BLOCK : AccessType.MOUNT));
        return types;
    }

    /** The fs type the capabilities name, if any (they must agree). */
    static Optional<FsType> fsType(List<Capability> capabilities) {
        Set<FsType> named = new TreeSet<>();
        capabilities.forEach(c -> c.fsType().ifPresent(named::add));
        if (named.size() > 1) {
            throw CsiException.invalidArgument("volume_capabilities name different fs types %s", named);
        }
        return named.stream().findFirst();
    }
}
