package dev.blockpool.node;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.StorageException;
import dev.blockpool.host.filesystems.FilesystemFreezes;
import dev.blockpool.pool.FreezeMarks;
import dev.blockpool.pool.MemberFreeze;
import dev.blockpool.pool.Pool;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The freeze of a group's members where the driver holds their mounts: a node-local pool's
 * driver serves the controller and node services in one process on the node, so the group's
 * members are staged (if at all) here. Each volume is marked in the pool before its file
 * systems are frozen, and unmarked once the kernel answers that they are thawed: not when a
 * thaw was merely tried.
 *
 * <p>A frozen file system blocks every write to it, and the writer cannot even be killed, so a
 * freeze is held for {@link #BOUND} at most: {@link #look}, run every {@link #LOOK_EVERY}, thaws
 * the members of a freeze past it, and tries again to thaw every volume still marked that no
 * freeze holds (a thaw that failed, a FIFREEZE that returned after its deadline, a mark a driver
 * that died left). A marked volume is told in its health, in a gauge and in an ERROR line.
 *
 * <p>Marks are the node's: only the process that holds the node's claim on the pool thaws what
 * they name, so a second process started on the same pool never thaws a freeze of the first.
 */
public final class GroupMemberFreeze implements MemberFreeze, FrozenVolumes {

    /** How long a group's members stay frozen at most: writers to them wait that long. */
    public static final Duration BOUND = Duration.ofSeconds(30);
    /** How often freezes are held to their bound and what is still marked is thawed again. */
    public static final Duration LOOK_EVERY = Duration.ofSeconds(1);

    private static final Logger log = LoggerFactory.getLogger(GroupMemberFreeze.class);

    private final Pool pool;
    private final FreezeMarks marks;
    private final FilesystemFreezes freezes;
    private final Clock clock;
    private final Duration bound;
    private final BooleanSupplier holdsTheNode;

    // guarded by this
    /** Volumes marked, with since when: what may be frozen, whether or not a freeze holds it. */
    private final Map<String, Instant> marked = new LinkedHashMap<>();
    /** Why each marked volume is not thawed yet, once a thaw has failed: what was logged and is told. */
    private final Map<String, String> stillFrozen = new HashMap<>();

    private final List<Hold> holds = new ArrayList<>();
    private boolean leftoversTaken;

    /**
     * {@code holdsTheNode}: whether this process holds the node's claim on the pool, which it
     * may take later (its holder gone).
     */
    public GroupMemberFreeze(
            Pool pool, FilesystemFreezes freezes, Clock clock, Duration bound, BooleanSupplier holdsTheNode) {
        this.pool = pool;
        this.marks = pool.freezeMarks();
        this.freezes = freezes;
        this.clock = clock;
        this.bound = bound;
        this.holdsTheNode = holdsTheNode;
    }

    @Override
    public Frozen freeze(List<String> volumeIds) {
        thawLeft(volumeIds);
        Hold hold = new Hold(clock.instant());
        synchronized (this) {
            holds.add(hold);
        }
        try {
            for (String volumeId : volumeIds) {
                synchronized (this) {
                    if (hold.released) {
                        throw StorageException.unavailable(
                                "the freeze of %s was thawed at its bound of %s before every file system was frozen",
                                volumeIds, BlockingCalls.describe(bound));
                    }
                    hold.marked.add(volumeId);
                    marked.put(volumeId, hold.since);
                }
                marks.mark(volumeId);
                if (freezes.freeze(image(volumeId)).isEmpty()) {
                    // raw block, or not staged on this node: no file system to hold still
                    log.info(
                            "volume {} has no file system mounted here: its member is crash-consistent alone",
                            volumeId);
                    marks.clear(volumeId);
                    synchronized (this) {
                        hold.marked.remove(volumeId);
                        marked.remove(volumeId);
                    }
                } else {
                    synchronized (this) {
                        hold.frozen.add(volumeId);
                    }
                }
            }
        } catch (RuntimeException failure) {
            release(hold, false).ifPresent(volumes -> thaw(volumes, failure));
            throw failure;
        }
        return hold;
    }

    @Override
    public void thawLeft(List<String> volumeIds) {
        List<String> left;
        synchronized (this) {
            Set<String> held = held();
            left = volumeIds.stream()
                    .filter(marked::containsKey)
                    .filter(v -> !held.contains(v))
                    .toList();
        }
        thaw(left, null);
    }

    /** A group's freeze: thawed when closed, or by {@link #look} once past its bound. */
    private final class Hold implements Frozen {
        private final Instant since;
        // guarded by the GroupMemberFreeze
        private final List<String> marked = new ArrayList<>();
        private final List<String> frozen = new ArrayList<>();
        private boolean released;
        private boolean outlived;

        Hold(Instant since) {
            this.since = since;
        }

        @Override
        public List<String> volumeIds() {
            synchronized (GroupMemberFreeze.this) {
                return List.copyOf(frozen);
            }
        }

        @Override
        public boolean heldThroughout() {
            synchronized (GroupMemberFreeze.this) {
                return !outlived;
            }
        }

        @Override
        public void close() {
            release(this, false).ifPresent(volumes -> thaw(volumes, null));
        }
    }

    /**
     * Lets the hold go, once: its volumes, for the one call that does, to thaw; they are no
     * freeze's from then on.
     */
    private synchronized Optional<List<String>> release(Hold hold, boolean outlived) {
        if (hold.released) {
            return Optional.empty();
        }
        hold.released = true;
        hold.outlived = outlived;
        holds.remove(hold);
        return Optional.of(List.copyOf(hold.marked));
    }

    /** The volumes a freeze holds within its bound: no one else thaws them. */
    private synchronized Set<String> held() {
        Set<String> held = new HashSet<>();
        holds.forEach(hold -> held.addAll(hold.marked));
        return held;
    }

    /**
     * Thaws what a driver that died during a group snapshot left frozen, once this process holds
     * the node's claim: at start, and else at the first {@link #look} that finds it holding it.
     */
    public void thawLeftovers() {
        synchronized (this) {
            if (leftoversTaken) {
                return;
            }
        }
        if (!holdsTheNode.getAsBoolean()) {
            return; // the marks are the node's holder's; another process may be freezing now
        }
        Map<String, Instant> left = new LinkedHashMap<>(marks.markedSince());
        synchronized (this) {
            leftoversTaken = true;
            left.keySet().removeAll(marked.keySet()); // this process's own: a freeze may hold them
            marked.putAll(left);
        }
        if (!left.isEmpty()) {
            log.warn("thawing the file systems of volumes a group snapshot left frozen: {}", left.keySet());
            thawOrLeaveToTheNextLook(List.copyOf(left.keySet()));
        }
    }

    /**
     * Thaws the members of every freeze held past its bound, and tries again every marked volume
     * no freeze holds; run every {@link #LOOK_EVERY}.
     */
    public void look() {
        Instant now = clock.instant();
        List<Hold> outlived;
        synchronized (this) {
            outlived = holds.stream()
                    .filter(hold -> !now.isBefore(hold.since.plus(bound)))
                    .toList();
        }
        for (Hold hold : outlived) {
            release(hold, true)
                    .ifPresent(volumes -> log.error(
                            "the file systems of {} have been frozen since {}, longer than the bound of {}: thawing "
                                    + "them; their group snapshot fails",
                            volumes,
                            hold.since,
                            BlockingCalls.describe(bound)));
        }
        thawLeftovers();
        List<String> left;
        synchronized (this) {
            Set<String> held = held();
            left = marked.keySet().stream().filter(v -> !held.contains(v)).toList();
        }
        thawOrLeaveToTheNextLook(left);
    }

    /** Thaws these volumes; one the kernel does not answer thawed is told, and the next look tries again. */
    private void thawOrLeaveToTheNextLook(List<String> volumeIds) {
        try {
            thaw(volumeIds, null);
        } catch (RuntimeException e) {
            // each volume is logged and told in its health by now
        }
    }

    /** How many volumes may be frozen: marked, and not answered thawed by the kernel. */
    public synchronized int frozenCount() {
        return marked.size();
    }

    @Override
    public synchronized Optional<String> frozen(String volumeId) {
        Instant since = marked.get(volumeId);
        if (since == null) {
            return Optional.empty();
        }
        String why = stillFrozen.get(volumeId);
        return Optional.of(
                why != null
                        ? why
                        : "the file system of volume " + volumeId
                                + " has been frozen since " + since + " by a group snapshot, and is thawed within "
                                + BlockingCalls.describe(bound));
    }

    /**
     * Thaws each volume's file systems, last frozen first, and removes its mark once the kernel
     * answers that they are thawed; a volume it does not keeps its mark (the next look tries
     * again), and the failure is thrown (added to {@code cause} when there is one).
     */
    private void thaw(List<String> volumeIds, RuntimeException cause) {
        RuntimeException failure = cause;
        for (String volumeId : volumeIds.reversed()) {
            Optional<String> notThawed;
            try {
                notThawed = thaw(volumeId);
            } catch (RuntimeException e) {
                notThawed = Optional.of("its thaw failed: " + e.getMessage());
            }
            if (notThawed.isPresent()) {
                RuntimeException e = StorageException.unavailable("%s", stillFrozen(volumeId, notThawed.get()));
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

    /** Thaws one volume: empty once the kernel answered it thawed and its mark is gone, else why not. */
    private Optional<String> thaw(String volumeId) {
        return switch (freezes.thaw(image(volumeId))) {
            case THAWED -> {
                marks.clear(volumeId);
                forget(volumeId, "is thawed: writes to it go on");
                yield Optional.empty();
            }
            case UNANSWERED ->
                Optional.of("a freeze or thaw of its file system has not returned from the kernel (a writer holds it, "
                        + "or its device does not answer)");
            case NOTHING_MOUNTED -> {
                if (!marks.isMarked(volumeId)) {
                    forget(volumeId, "has no mark any more: it is taken as thawed");
                    yield Optional.empty();
                }
                yield Optional.of("no file system mounted from it is seen in this driver's mount table, so whether it "
                        + "is thawed cannot be told; its mark is kept");
            }
        };
    }

    /** The volume is no longer frozen; {@code what} is logged when it had been told as still frozen. */
    private void forget(String volumeId, String what) {
        boolean wasTold;
        synchronized (this) {
            marked.remove(volumeId);
            wasTold = stillFrozen.remove(volumeId) != null;
        }
        if (wasTold) {
            log.warn("volume {} {}", volumeId, what);
        }
    }

    /** Records and logs, once per reason, why a volume is not thawed; answers what health tells. */
    private String stillFrozen(String volumeId, String reason) {
        String where;
        try {
            List<Path> mountPoints = freezes.fileSystemsOf(image(volumeId));
            where = mountPoints.isEmpty()
                    ? "<its staging path>"
                    : mountPoints.getFirst().toString();
        } catch (RuntimeException e) {
            where = "<its staging path>";
        }
        String why;
        boolean changed;
        synchronized (this) {
            Instant since = marked.getOrDefault(volumeId, clock.instant());
            why = "the file system of volume " + volumeId + " may have been frozen since " + since
                    + " by a group snapshot, and is not thawed: " + reason + ". Writes to it wait, and its pod cannot "
                    + "be killed, until it is; the driver tries again every " + BlockingCalls.describe(LOOK_EVERY)
                    + ". Thaw it on the node with 'fsfreeze --unfreeze " + where + "', then remove "
                    + marks.markOf(volumeId);
            changed = !why.equals(stillFrozen.put(volumeId, why));
        }
        if (changed) {
            log.error("{}", why);
        }
        return why;
    }

    private Path image(String volumeId) {
        return pool.volumes().imagePath(volumeId);
    }
}
