package dev.blockpool.node;

import dev.blockpool.common.HealthProblem;
import dev.blockpool.common.StorageException;
import dev.blockpool.host.NodeHost;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What this node does while its pool is short of room (an over-committed pool below its warning
 * level, or full): it writes the journal of every ext4 filesystem staged here home, while the
 * pool still has blocks for the holes that takes. A filesystem whose journal is home and that is
 * not writing when the pool fills has nothing left that the full pool can refuse, so it comes out
 * clean; one that keeps allocating metadata in a full pool can still abort its journal
 * (docs/pool.md, "When the pool fills"). Repeated at each look while the pool is short, so a
 * volume's later writes are written home too.
 */
public final class FullPoolGuard {

    private static final Logger log = LoggerFactory.getLogger(FullPoolGuard.class);
    /** The pool problems that make the guard act, as the pool's health names them. */
    private static final Set<String> SHORT_OF_ROOM = Set.of("PoolNearlyFull", "PoolFull");

    private final NodeHost host;
    private final VolumeCatalog volumes;

    public FullPoolGuard(NodeHost host, VolumeCatalog volumes) {
        this.host = host;
        this.volumes = volumes;
    }

    /** Looks at the pool as this node sees it now, and acts when it is short of room. */
    public void look() {
        look(volumes.storageHealth());
    }

    /** Acts when {@code poolProblems} (the pool's, as a health call found them) say it is short of room. */
    void look(List<HealthProblem> poolProblems) {
        if (poolProblems.stream().noneMatch(p -> SHORT_OF_ROOM.contains(p.reason()))) {
            return;
        }
        int written = 0;
        for (Path image : NodeCensus.boundImages(host, volumes).keySet()) {
            try {
                written += host.journals().checkpoint(image) ? 1 : 0;
            } catch (StorageException e) {
                log.warn("the pool is short of room, and {}", e.getMessage());
            }
        }
        log.debug("the pool is short of room: wrote {} staged filesystems' journals home", written);
    }
}
