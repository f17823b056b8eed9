package dev.blockpool.controller;

import dev.blockpool.common.CsiException;
import dev.blockpool.pool.Allocation;
import dev.blockpool.pool.Ids;
import java.util.Map;
import java.util.Optional;

/**
 * StorageClass parameters of CreateVolume. Unknown keys are refused so that a typo in a
 * StorageClass fails loudly instead of being silently ignored; the keys external-provisioner
 * adds itself ({@code csi.storage.k8s.io/...}, e.g. with --extra-create-metadata) are accepted.
 */
record VolumeParameters(String fsType, Allocation allocation) {

    static final String FS_TYPE = "fsType";
    static final String ALLOCATION = "allocation";
    private static final String PROVISIONER_PREFIX = "csi.storage.k8s.io/";

    static VolumeParameters parse(Map<String, String> parameters, Optional<String> capabilityFsType) {
        for (String key : parameters.keySet()) {
            // csi.storage.k8s.io/ephemeral marks the node's inline volumes, which NodeUnpublish deletes.
            if (!key.equals(FS_TYPE) && !key.equals(ALLOCATION) && !key.startsWith(PROVISIONER_PREFIX)
                    || key.equals(PROVISIONER_PREFIX + "ephemeral")) {
                throw CsiException.invalidArgument(
                        "parameter %s is not supported: the driver accepts %s and %s", Ids.quote(key), FS_TYPE,
                        ALLOCATION);
            }
        }
        Optional<String> parameterFsType = Optional.ofNullable(parameters.get(FS_TYPE));
        if (parameterFsType.isPresent() && capabilityFsType.isPresent()
                && !parameterFsType.get().equals(capabilityFsType.get())) {
            throw CsiException.invalidArgument("parameter fsType %s contradicts the capability's fs_type %s",
                    parameterFsType.get(), capabilityFsType.get());
        }
        String fsType = capabilityFsType.or(() -> parameterFsType).orElse("ext4");
        if (!Capabilities.FS_TYPES.contains(fsType)) {
            throw CsiException.invalidArgument("fsType %s is not supported: use ext4 or xfs", Ids.quote(fsType));
        }
        Allocation allocation = Optional.ofNullable(parameters.get(ALLOCATION)).map(Allocation::parse)
                .orElse(Allocation.SPARSE);
        return new VolumeParameters(fsType, allocation);
    }
}
