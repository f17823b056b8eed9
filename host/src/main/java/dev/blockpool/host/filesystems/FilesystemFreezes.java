package dev.blockpool.host.filesystems;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.StorageException;
import dev.blockpool.host.loops.LoopAttachments;
import dev.blockpool.host.mounts.DeviceNumber;
import dev.blockpool.host.mounts.MountInfo;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Freezes and thaws the file systems this host has mounted from a volume's image: one freeze
 * per file system (its staging mount and every bind of it share one super block), found in the
 * mount table through the image's loop devices. A raw block volume, or one not staged here, has
 * none: nothing is frozen.
 *
 * <p>Each call has a deadline, and one past it is left to the kernel, which may still carry it
 * out: a FIFREEZE waits for the writes in flight, and one that returns after its deadline froze
 * a file system nobody holds any more, so it is thawed as soon as it returns. Until a call on a
 * file system has returned, nothing can tell whether it is frozen: {@link #thaw} says so rather
 * than assume it thawed, and starts no second call on it.
 */
public final class FilesystemFreezes {

    /** How long a FIFREEZE is waited for: it waits for the writes in flight, and flushes the dirty data. */
    public static final Duration FREEZE_DEADLINE = Duration.ofSeconds(10);
    /** How long a FITHAW is waited for: it returns at once, unless the file system's device does not answer. */
    public static final Duration THAW_DEADLINE = Duration.ofSeconds(5);

    private static final Logger log = LoggerFactory.getLogger(FilesystemFreezes.class);

    private final LoopAttachments loops;
    private final FreezeCalls calls;
    private final BlockingCalls blocking;
    private final Duration freezeDeadline;
    private final Duration thawDeadline;
    /** Mount points with a FIFREEZE or FITHAW in the kernel; guarded by this. */
    private final Set<Path> unanswered = new HashSet<>();

    public FilesystemFreezes(
            LoopAttachments loops,
            FreezeCalls calls,
            BlockingCalls blocking,
            Duration freezeDeadline,
            Duration thawDeadline) {
        this.loops = loops;
        this.calls = calls;
        this.blocking = blocking;
        this.freezeDeadline = freezeDeadline;
        this.thawDeadline = thawDeadline;
    }

    /** On this host: the freeze ioctls on the threads of {@code blocking}. */
    public static FilesystemFreezes onThisHost(LoopAttachments loops, BlockingCalls blocking) {
        return new FilesystemFreezes(loops, new LinuxFreezeCalls(), blocking, FREEZE_DEADLINE, THAW_DEADLINE);
    }

    /** What the kernel answered a thaw of an image's file systems. */
    public enum Thaw {
        /** Every file system mounted from it answered that it is not frozen (any more). */
        THAWED,
        /** No file system mounted from it is seen here: whether one is frozen cannot be told. */
        NOTHING_MOUNTED,
        /** A FIFREEZE or FITHAW of one of them has not returned: it may be frozen still, or yet. */
        UNANSWERED
    }

    /**
     * Freezes every file system mounted from the image and answers where; on a failure, thaws
     * those it froze before it throws. A FIFREEZE past its deadline is a failure, and undone
     * once it returns.
     */
    public List<Path> freeze(Path image) {
        List<Path> frozen = new ArrayList<>();
        try {
            for (Path mountPoint : fileSystemsOf(image)) {
                // Nobody holds a freeze that returns after its deadline: it is undone before writers wait on it.
                Optional<Boolean> answer = within(
                        mountPoint,
                        "FIFREEZE",
                        freezeDeadline,
                        () -> {
                            calls.freeze(mountPoint);
                            return true;
                        },
                        () -> calls.thaw(mountPoint));
                if (answer.isEmpty()) {
                    throw StorageException.unavailable(
                            "the freeze of the file system mounted at %s did not return within %s, or one before it "
                                    + "has not: a writer holds it, or its device does not answer; it is thawed once "
                                    + "the freeze returns",
                            mountPoint, BlockingCalls.describe(freezeDeadline));
                }
                frozen.add(mountPoint);
            }
            return frozen;
        } catch (RuntimeException failure) {
            for (Path mountPoint : frozen.reversed()) {
                try {
                    thawWithin(mountPoint);
                } catch (RuntimeException e) {
                    failure.addSuppressed(e);
                }
            }
            throw failure;
        }
    }

    /**
     * Thaws every file system mounted from the image, and answers what the kernel says of them;
     * a FITHAW that fails is thrown.
     */
    public Thaw thaw(Path image) {
        List<Path> mountPoints = fileSystemsOf(image);
        if (mountPoints.isEmpty()) {
            return Thaw.NOTHING_MOUNTED;
        }
        Thaw answer = Thaw.THAWED;
        for (Path mountPoint : mountPoints) {
            if (thawWithin(mountPoint).isEmpty()) {
                answer = Thaw.UNANSWERED;
            }
        }
        return answer;
    }

    private Optional<Boolean> thawWithin(Path mountPoint) {
        return within(mountPoint, "FITHAW", thawDeadline, () -> calls.thaw(mountPoint), () -> {});
    }

    /**
     * {@code call} (named {@code what}) on a thread for calls that can hang: its answer, or empty
     * when it has not returned within {@code deadline} or an earlier call on the same file system
     * has not. One past its deadline leaves the file system unanswered until it returns, and
     * then {@code undoIfLate} runs when it succeeded.
     */
    private Optional<Boolean> within(
            Path mountPoint, String what, Duration deadline, Supplier<Boolean> call, Runnable undoIfLate) {
        synchronized (this) {
            if (!unanswered.add(mountPoint)) {
                return Optional.empty();
            }
        }
        Late late = new Late();
        Optional<Boolean> answer;
        try {
            answer = blocking.answerWithin(deadline, what + " of " + mountPoint, () -> {
                Boolean value;
                try {
                    value = call.get();
                } catch (RuntimeException e) {
                    returned(mountPoint, what, late, null, e, undoIfLate);
                    throw e;
                }
                returned(mountPoint, what, late, value, null, undoIfLate);
                return value;
            });
        } catch (RuntimeException e) {
            synchronized (this) {
                unanswered.remove(mountPoint);
            }
            throw e;
        }
        synchronized (this) {
            if (answer.isPresent()) {
                unanswered.remove(mountPoint);
                return answer;
            }
            if (!late.returned) {
                late.abandoned = true; // the file system stays unanswered until the call returns
                return Optional.empty();
            }
            unanswered.remove(mountPoint); // it returned just as its deadline passed
            if (late.failure != null) {
                throw late.failure;
            }
            return Optional.of(late.value);
        }
    }

    /** What a call returned, and whether its caller stopped waiting for it first; guarded by the freezes. */
    private static final class Late {
        boolean returned;
        boolean abandoned;
        Boolean value;
        RuntimeException failure;
    }

    /** On the call's own thread, once the kernel has returned from it. */
    private void returned(
            Path mountPoint, String what, Late late, Boolean value, RuntimeException failure, Runnable undoIfLate) {
        synchronized (this) {
            late.returned = true;
            late.value = value;
            late.failure = failure;
            if (!late.abandoned) {
                return;
            }
            unanswered.remove(mountPoint); // what the kernel says of it can be asked again
        }
        log.warn(
                "{} of {} returned after its deadline{}",
                what,
                mountPoint,
                failure == null ? "" : " and failed: " + failure.getMessage());
        try {
            if (failure == null) {
                undoIfLate.run();
            }
        } catch (RuntimeException e) {
            log.error("cannot undo the late {} of {}: {}", what, mountPoint, e.getMessage());
        }
    }

    /** One mount point per file system on the image's loop devices: where it is frozen and thawed. */
    public List<Path> fileSystemsOf(Path image) {
        Map<DeviceNumber, Path> byDevice = new LinkedHashMap<>();
        for (MountInfo mount : loops.usersOf(image)) {
            if (!LoopAttachments.isDeviceNodeBind(mount)) {
                byDevice.putIfAbsent(mount.device(), mount.mountPoint());
            }
        }
        return List.copyOf(byDevice.values());
    }
}
