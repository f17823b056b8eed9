package dev.blockpool.node;

import csi.v1.Csi.NodeGetVolumeStatsResponse;
import csi.v1.Csi.VolumeUsage;
import dev.blockpool.host.VolumeStats;
import dev.blockpool.host.filesystems.FsStats;

/** The host side's usage of a volume as a NodeGetVolumeStats response. */
final class VolumeStatsMapper {

    private VolumeStatsMapper() {}

    static NodeGetVolumeStatsResponse toResponse(VolumeStats.Usage usage) {
        NodeGetVolumeStatsResponse.Builder builder = NodeGetVolumeStatsResponse.newBuilder();
        if (usage.filesystem().isPresent()) {
            FsStats fs = usage.filesystem().get();
            builder.addUsage(VolumeUsage.newBuilder()
                    .setUnit(VolumeUsage.Unit.BYTES)
                    .setTotal(fs.totalBytes())
                    .setUsed(fs.usedBytes())
                    .setAvailable(fs.availableBytes()));
            builder.addUsage(VolumeUsage.newBuilder()
                    .setUnit(VolumeUsage.Unit.INODES)
                    .setTotal(fs.totalInodes())
                    .setUsed(fs.usedInodes())
                    .setAvailable(fs.freeInodes()));
        }
        usage.blockBytes()
                .ifPresent(bytes -> builder.addUsage(
                        VolumeUsage.newBuilder().setUnit(VolumeUsage.Unit.BYTES).setTotal(bytes)));
        return builder.build();
    }
}
