package dev.blockpool.node;

import dev.blockpool.host.loops.LoopAttachments;
import dev.blockpool.pool.NodeHolds;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.Volume;
import java.util.Optional;

/**
 * What holds a volume on this host, for the controller served beside the node: the image's own
 * loop devices that an unstage would still release, and their mounts.
 */
public final class HostHolds implements NodeHolds {

    private final Pool pool;
    private final LoopAttachments loops;

    public HostHolds(Pool pool, LoopAttachments loops) {
        this.pool = pool;
        this.loops = loops;
    }

    @Override
    public Optional<String> of(Volume volume) {
        return loops.holders(pool.volumes().imagePath(volume.id())).map(LoopAttachments.Holders::describe);
    }
}
