package dev.blockpool.common;

import java.util.concurrent.Executor;

/**
 * The calls that run on the gRPC transport thread that read them, rather than on a thread of
 * their own: the few that answer from memory and from this node's kernel alone, where handing a
 * call to another thread and back would cost more than the call. Such a call must never wait on
 * something that can hang, since the transport thread serves other calls too: what waits
 * ({@link BlockingCalls}, {@link CommandRunner}) refuses to run on one, so that a call given work
 * it must not do fails in every test that makes it, instead of stalling a node's calls one day.
 */
public final class InPlaceCalls {

    private static final ThreadLocal<Boolean> RUNNING = new ThreadLocal<>();

    /** Runs a call's work on the calling thread, marked as in place while it runs. */
    public static final Executor EXECUTOR = work -> {
        RUNNING.set(Boolean.TRUE);
        try {
            work.run();
        } finally {
            RUNNING.remove();
        }
    };

    private InPlaceCalls() {}

    /**
     * Runs the rest of a call where it may wait: on a virtual thread of its own when the call
     * runs in place, else right here. For a call that is answered in place when it can be and
     * has to look further when not.
     */
    public static void elsewhere(Runnable rest) {
        if (RUNNING.get() != null) {
            Thread.ofVirtual().name("in-place-fallback").start(rest);
        } else {
            rest.run();
        }
    }

    /** Refuses {@code what} when it would wait on a transport thread. */
    public static void refuseWaiting(String what) {
        if (RUNNING.get() != null) {
            throw new IllegalStateException(what + " would wait on the gRPC transport thread, which serves other calls;"
                    + " the call must run on a thread of its own");
        }
    }
}
