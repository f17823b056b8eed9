package dev.blockpool.common;

import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * One operation per ID at a time. A second call for an ID that is busy fails at once with
 * ABORTED (the CSI spec's "operation pending" answer; the sidecars retry with backoff), while
 * calls for different IDs run in parallel.
 */
public final class OperationLocks {

    private final ConcurrentHashMap<String, Thread> holders = new ConcurrentHashMap<>();

    /** Runs {@code work} holding the lock of every ID given (an empty ID is not locked). */
    public <T> T withLock(Supplier<T> work, String... ids) {
        int taken = 0;
        try {
            for (String id : ids) {
                if (id.isEmpty()) {
                    taken++;
                    continue;
                }
                Thread previous = holders.putIfAbsent(id, Thread.currentThread());
                if (previous != null) {
                    throw StorageException.busy("an operation on %s is already in progress; retry later", id);
                }
                taken++;
            }
            return work.get();
        } finally {
            for (int i = 0; i < taken; i++) {
                if (!ids[i].isEmpty()) {
                    holders.remove(ids[i], Thread.currentThread());
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
}
