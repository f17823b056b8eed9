package dev.blockpool.controller;

import dev.blockpool.common.FsType;
import dev.blockpool.common.Quoting;
import dev.blockpool.csi.CsiException;
import dev.blockpool.csi.CsiKeys;
import dev.blockpool.pool.Allocation;
import java.util.Map;
import java.util.Optional;

/**
 * StorageClass parameters of CreateVolume. Unknown keys are refused so that a typo in a
 * StorageClass fails loudly instead of being silently ignored; the keys external-provisioner
 * adds itself ({@code csi.storage.k8s.io/...}, e.g. with --extra-create-metadata) are accepted.
 */
record VolumeParameters(FsType fsType, Allocation allocation) {

    static VolumeParameters parse(Map<String, String> parameters, Optional<FsType> capabilityFsType) {
        for (String key : parameters.keySet()) {
            // The ephemeral key marks the node's inline volumes, which NodeUnpublish deletes.
            boolean known = key.equals(CsiKeys.FS_TYPE) || key.equals(CsiKeys.ALLOCATION)
                    || key.startsWith(CsiKeys.PROVISIONER_PREFIX);
            if (!known || key.equals(CsiKeys.EPHEMERAL)) {
                throw CsiException.invalidArgument("parameter %s is not supported: the driver accepts %s and %s",
                        Quoting.quote(key), CsiKeys.FS_TYPE, CsiKeys.ALLOCATION);
            }
        }
        Optional<FsType> parameterFsType = Optional.ofNullable(parameters.get(CsiKeys.FS_TYPE)).map(FsType::parse);
        if (parameterFsType.isPresent() && capabilityFsType.isPresent()
                && parameterFsType.get() != capabilityFsType.get()) {
            throw CsiException.invalidArgument("parameter fsType %s contradicts the capability's fs_type %s",
                    parameterFsType.get(), capabilityFsType.get());
        }
        FsType fsType = capabilityFsType.or(() -> parameterFsType).orElse(FsType.EXT4);
        Allocation allocation = Optional.ofNullable(parameters.get(CsiKeys.ALLOCATION)).map(Allocation::parse)
                .orElse(Allocation.SPARSE);
        return new VolumeParameters(fsType, allocation);
    }
}
