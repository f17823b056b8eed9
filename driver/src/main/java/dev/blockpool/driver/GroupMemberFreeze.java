package dev.blockpool.driver;

import dev.blockpool.controller.MemberFreeze;
import dev.blockpool.host.FilesystemFreezes;
import dev.blockpool.pool.FreezeMarks;
import dev.blockpool.pool.Pool;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The freeze of a group's members where the driver holds their mounts: a node-local pool's
 * driver serves the controller and node services in one process on the node, so the group's
 * members are staged (if at all) here. Each volume is marked in the pool before its file
 * systems are frozen and unmarked after the thaw: a driver that dies in between leaves a mark,
 * and the next one to start thaws what it names ({@link #thawLeftovers}), from the pool and the
 * mount table alone.
 */
final class GroupMemberFreeze implements MemberFreeze {

    private static final Logger log = LoggerFactory.getLogger(GroupMemberFreeze.class);

    private final Pool pool;
    private final FreezeMarks marks;
    private final FilesystemFreezes freezes;

    GroupMemberFreeze(Pool pool, FilesystemFreezes freezes) {
        this.pool = pool;
        this.marks = pool.freezeMarks();
        this.freezes = freezes;
    }

    @Override
    public Frozen freeze(List<String> volumeIds) {
        List<String> marked = new ArrayList<>();
        List<String> frozen = new ArrayList<>();
        try {
            for (String volumeId : volumeIds) {
                marks.mark(volumeId);
                marked.add(volumeId);
                List<Path> mountPoints = freezes.freeze(image(volumeId));
                if (mountPoints.isEmpty()) {
                    // raw block, or not staged on this node: no file system to hold still
                    log.info(
                            "volume {} has no file system mounted here: its member is crash-consistent alone",
                            volumeId);
                } else {
                    frozen.add(volumeId);
                }
            }
        } catch (RuntimeException failure) {
            thaw(marked, failure);
            throw failure;
        }
        return new Frozen() {
            @Override
            public List<String> volumeIds() {
                return List.copyOf(frozen);
            }

            @Override
            public void close() {
                thaw(marked, null);
            }
        };
    }

    /** Thaws what a driver that died during a group snapshot left frozen; at start, before serving. */
    void thawLeftovers() {
        List<String> left = marks.marked();
        if (!left.isEmpty()) {
            log.warn("thawing the file systems of volumes a group snapshot left frozen: {}", left);
            thaw(left, null);
        }
    }

    /**
     * Thaws each volume's file systems, last frozen first, and removes its mark; a volume that
     * fails to thaw keeps its mark for the next start, and the failure is thrown (added to
     * {@code cause} when there is one).
     */
    private void thaw(List<String> volumeIds, RuntimeException cause) {
        RuntimeException failure = cause;
        for (String volumeId : volumeIds.reversed()) {
            try {
                freezes.thaw(image(volumeId));
                marks.clear(volumeId);
            } catch (RuntimeException e) {
                log.error("volume {} may still be frozen: {}", volumeId, e.getMessage());
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null && failure != cause) {
            throw failure;
        }
    }

    private Path image(String volumeId) {
        return pool.volumes().imagePath(volumeId);
    }
}
