package dev.blockpool.node;

import csi.v1.Csi;
import dev.blockpool.host.FsStats;
import dev.blockpool.host.VolumeStats;

/** The host side's usage of a volume as a NodeGetVolumeStats response. */
final class VolumeStatsMapper {

    private VolumeStatsMapper() {}

    static Csi.NodeGetVolumeStatsResponse toResponse(VolumeStats.Usage usage) {
        Csi.NodeGetVolumeStatsResponse.Builder builder = Csi.NodeGetVolumeStatsResponse.newBuilder();
        if (usage.filesystem().isPresent()) {
            FsStats fs = usage.filesystem().get();
            builder.addUsage(Csi.VolumeUsage.newBuilder()
                    .setUnit(Csi.VolumeUsage.Unit.BYTES)
                    .setTotal(fs.totalBytes())
                    .setUsed(fs.usedBytes())
                    .setAvailable(fs.availableBytes()));
            builder.addUsage(Csi.VolumeUsage.newBuilder()
                    .setUnit(Csi.VolumeUsage.Unit.INODES)
                    .setTotal(fs.totalInodes())
                    .setUsed(fs.usedInodes())
                    .setAvailable(fs.freeInodes()));
        }
        usage.blockBytes()
                .ifPresent(bytes -> builder.addUsage(Csi.VolumeUsage.newBuilder()
                        .setUnit(Csi.VolumeUsage.Unit.BYTES)
                        .setTotal(bytes)));
        return builder.build();
    }
}
