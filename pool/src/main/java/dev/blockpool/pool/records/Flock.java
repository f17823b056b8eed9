package dev.blockpool.pool.records;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.blockpool.common.Libc;
import java.lang.foreign.FunctionDescriptor;
import java.lang.invoke.MethodHandle;

/**
 * flock(2), bound here beside its callers ({@link PoolLockFile}, {@link DurableFiles}) and called
 * through {@link Libc#call}: a lock on the open file description, so two descriptors opened
 * separately exclude each other even in one process, and NFS and GlusterFS clients on other
 * hosts see it too.
 */
final class Flock {

    private static final int LOCK_EX = 2;
    private static final int LOCK_NB = 4;

    private Flock() {}

    /** Takes the exclusive lock on {@code fd} without waiting: EWOULDBLOCK while another holds it. */
    static void tryLockExclusive(int fd) {
        Libc.call("flock", call -> call.check((int) Handle.FLOCK.invokeExact(call.state(), fd, LOCK_EX | LOCK_NB)));
    }

    /** Bound when first used, as every C function is: see {@link Libc}. */
    private static final class Handle {
        static final MethodHandle FLOCK = Libc.bind("flock", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT), -1);
    }
}
