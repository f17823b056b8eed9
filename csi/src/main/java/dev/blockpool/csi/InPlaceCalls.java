package dev.blockpool.csi;

import dev.blockpool.common.NoWaiting;
import java.util.concurrent.Executor;

/**
 * The calls that run on the gRPC transport thread that read them, rather than on a thread of
 * their own: the few that answer from memory and from this node's kernel alone, where handing a
 * call to another thread and back would cost more than the call. Such a call must never wait on
 * something that can hang, since the transport thread serves other calls too: the thread is
 * marked {@link NoWaiting} while the call runs, so what waits refuses to run on it and a call
 * given work it must not do fails in every test that makes it, instead of stalling a node's calls
 * one day. The server places calls here (the driver's CallPlacement); a service whose call may
 * have to look further hands the rest {@link #elsewhere}.
 */
public final class InPlaceCalls {

    private static final String TRANSPORT_THREAD = "the gRPC transport thread, which serves other calls";

    /** Runs a call's work on the calling thread, marked as in place while it runs. */
    public static final Executor EXECUTOR = work -> NoWaiting.run(TRANSPORT_THREAD, work);

    private InPlaceCalls() {}

    /**
     * Runs the rest of a call where it may wait: on a virtual thread of its own when the call
     * runs in place, else right here. For a call that is answered in place when it can be and
     * has to look further when not.
     */
    public static void elsewhere(Runnable rest) {
        if (NoWaiting.here()) {
            Thread.ofVirtual().name("in-place-fallback").start(rest);
        } else {
            rest.run();
        }
    }
}
