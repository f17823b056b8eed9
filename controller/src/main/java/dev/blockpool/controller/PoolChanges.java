package dev.blockpool.controller;

import dev.blockpool.common.OperationLocks;
import dev.blockpool.pool.ControllerClaim;
import dev.blockpool.pool.Pool;
import java.util.function.Supplier;

/**
 * How every controller-side change to the pool is made, whichever service asks for it: only by
 * the pool's acting controller ({@link ControllerClaim}; a standby answers FAILED_PRECONDITION
 * naming the holder), and under the per-ID locks of everything it touches.
 */
final class PoolChanges {

    private final Pool pool;
    private final OperationLocks locks;

    PoolChanges(Pool pool, OperationLocks locks) {
        this.pool = pool;
        this.locks = locks;
    }

    <T> T make(Supplier<T> work, String... ids) {
        pool.controllerClaim().require();
        return locks.withLock(work, ids);
    }

    void make(Runnable work, String... ids) {
        make(
                () -> {
                    work.run();
                    return null;
                },
                ids);
    }
}
