package dev.blockpool.common;

import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * One operation per ID at a time, or many that share it. A call that cannot have its ID fails at
 * once with ABORTED (the CSI spec's "operation pending" answer; the sidecars and kubelet retry
 * with backoff), never waits, while calls for different IDs run in parallel.
 *
 * <p>An ID is held exclusively ({@link #withLock}: create, delete, stage, unstage, expand, the
 * reconcile) or shared ({@link #withShared}: the publishes and unpublishes of one staged volume
 * at different targets, which need only that the volume stays staged while they run). A shared
 * hold also holds its part, the target, exclusively: two calls on one target still exclude each
 * other, two on different targets do not.
 */
public final class OperationLocks {

    /** How an ID is held: by one call, or by {@code count} calls sharing it. */
    private sealed interface Hold {}

    private record Exclusive(Thread holder) implements Hold {}

    private record Shared(int count) implements Hold {}

    private final ConcurrentHashMap<String, Hold> holds = new ConcurrentHashMap<>();

    /** Runs {@code work} holding the lock of every ID given (an empty ID is not locked). */
    public <T> T withLock(Supplier<T> work, String... ids) {
        int taken = 0;
        Exclusive mine = new Exclusive(Thread.currentThread());
        try {
            for (String id : ids) {
                if (!id.isEmpty() && holds.putIfAbsent(id, mine) != null) {
                    throw busy(id);
                }
                taken++;
            }
            return work.get();
        } finally {
            for (int i = 0; i < taken; i++) {
                if (!ids[i].isEmpty()) {
                    holds.remove(ids[i], mine);
                }
            }
        }
    }

    public void withLock(Runnable work, String... ids) {
        withLock(
                () -> {
                    work.run();
                    return null;
                },
                ids);
    }

    /**
     * Runs {@code work} sharing {@code id} with the other shared holds of it, and holding its
     * {@code part} (a target path) exclusively; ABORTED while {@code id} is held exclusively or
     * the part is held.
     */
    public <T> T withShared(Supplier<T> work, String id, String part) {
        holds.compute(id, (key, hold) -> switch (hold) {
            case null -> new Shared(1);
            case Shared shared -> new Shared(shared.count() + 1);
            case Exclusive exclusive -> throw busy(id);
        });
        try {
            return withLock(work, id + '\0' + part); // an ID never holds a NUL: no clash with one
        } finally {
            holds.computeIfPresent(
                    id,
                    (key, hold) -> hold instanceof Shared shared && shared.count() > 1
                            ? new Shared(shared.count() - 1)
                            : null);
        }
    }

    private static StorageException busy(String id) {
        return StorageException.busy("an operation on %s is already in progress; retry later", id.replace('\0', ' '));
    }
}
