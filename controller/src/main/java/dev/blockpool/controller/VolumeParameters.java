package dev.blockpool.controller;

import dev.blockpool.common.FsType;
import dev.blockpool.common.IoLimits;
import dev.blockpool.common.Quoting;
import dev.blockpool.csi.CsiException;
import dev.blockpool.csi.CsiKeys;
import dev.blockpool.pool.Allocation;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * StorageClass parameters of CreateVolume, and the mutable parameters of a VolumeAttributesClass
 * that CreateVolume and ControllerModifyVolume receive: only {@code allocation} and the I/O
 * limits can change after a volume is made ({@link #MUTABLE_KEYS}); a mutable parameter
 * overrides the StorageClass's. Unknown keys are refused so that a typo in a
 * StorageClass fails loudly instead of being silently ignored; the keys external-provisioner
 * adds itself ({@code csi.storage.k8s.io/...}, e.g. with --extra-create-metadata) are accepted.
 */
record VolumeParameters(FsType fsType, Allocation allocation, IoLimits ioLimits) {

    /** The parameters ControllerModifyVolume can change. */
    static final Set<String> MUTABLE_KEYS = Stream.concat(
                    Stream.of(CsiKeys.ALLOCATION), IoLimitParameters.KEYS.stream())
            .collect(Collectors.toUnmodifiableSet());

    /** What a VolumeAttributesClass asks of a volume: its allocation, if it names one, and its parameters. */
    record Mutable(Optional<Allocation> allocation, Map<String, String> parameters) {

        /** The limits of a volume made with the StorageClass parameters {@code storageClass}. */
        IoLimits ioLimitsOver(Map<String, String> storageClass) {
            return IoLimitParameters.of(storageClass, parameters);
        }
    }

    static VolumeParameters parse(Map<String, String> parameters, Optional<FsType> capabilityFsType) {
        return parse(parameters, Map.of(), capabilityFsType);
    }

    static VolumeParameters parse(
            Map<String, String> parameters, Map<String, String> mutableParameters, Optional<FsType> capabilityFsType) {
        Mutable mutable = mutable(mutableParameters);
        for (String key : parameters.keySet()) {
            // The ephemeral key marks the node's inline volumes, which NodeUnpublish deletes.
            boolean known = key.equals(CsiKeys.FS_TYPE)
                    || MUTABLE_KEYS.contains(key)
                    || key.startsWith(CsiKeys.PROVISIONER_PREFIX);
            if (!known || key.equals(CsiKeys.EPHEMERAL)) {
                throw CsiException.invalidArgument(
                        "parameter %s is not supported: the driver accepts %s, %s and %s",
                        Quoting.quote(key),
                        CsiKeys.FS_TYPE,
                        CsiKeys.ALLOCATION,
                        String.join(", ", IoLimitParameters.KEYS));
            }
        }
        Optional<FsType> parameterFsType =
                Optional.ofNullable(parameters.get(CsiKeys.FS_TYPE)).map(FsType::parse);
        if (parameterFsType.isPresent()
                && capabilityFsType.isPresent()
                && parameterFsType.get() != capabilityFsType.get()) {
            throw CsiException.invalidArgument(
                    "parameter fsType %s contradicts the capability's fs_type %s",
                    parameterFsType.get(), capabilityFsType.get());
        }
        FsType fsType = capabilityFsType.or(() -> parameterFsType).orElse(FsType.EXT4);
        Allocation allocation = mutable.allocation()
                .or(() ->
                        Optional.ofNullable(parameters.get(CsiKeys.ALLOCATION)).map(Allocation::parse))
                .orElse(Allocation.SPARSE);
        return new VolumeParameters(fsType, allocation, mutable.ioLimitsOver(parameters));
    }

    /**
     * What a VolumeAttributesClass's mutable parameters ask for; INVALID_ARGUMENT for any key that
     * cannot change, saying which can, and for a value that cannot be applied.
     */
    static Mutable mutable(Map<String, String> mutableParameters) {
        for (String key : mutableParameters.keySet()) {
            if (!MUTABLE_KEYS.contains(key)) {
                throw CsiException.invalidArgument(
                        "mutable parameter %s %s: those that can change are %s and %s",
                        Quoting.quote(key),
                        key.equals(CsiKeys.FS_TYPE) ? "cannot change once the volume is made" : "is not supported",
                        CsiKeys.ALLOCATION,
                        String.join(", ", IoLimitParameters.KEYS));
            }
        }
        IoLimitParameters.check(mutableParameters);
        return new Mutable(
                Optional.ofNullable(mutableParameters.get(CsiKeys.ALLOCATION)).map(Allocation::parse),
                Map.copyOf(mutableParameters));
    }
}
