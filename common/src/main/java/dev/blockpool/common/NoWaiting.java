package dev.blockpool.common;

/**
 * Threads on which nothing may wait on what can hang, because they serve other work too: what
 * waits ({@link BlockingCalls}, {@link CommandRunner}) refuses to run on one, so that work given
 * to such a thread fails in every test that makes it, instead of stalling the thread one day.
 * Which threads those are is decided above (the gRPC transport thread, by the CSI edge's
 * InPlaceCalls); here a thread is only marked, with words saying what it is.
 */
public final class NoWaiting {

    private static final ThreadLocal<String> MARKED = new ThreadLocal<>();

    private NoWaiting() {}

    /**
     * Runs {@code work} on the calling thread, marked as {@code thread} (its description, for a refusal) while it runs.
     */
    public static void run(String thread, Runnable work) {
        MARKED.set(thread);
        try {
            work.run();
        } finally {
            MARKED.remove();
        }
    }

    /** Whether the calling thread is one on which nothing may wait. */
    public static boolean here() {
        return MARKED.get() != null;
    }

    /** Refuses {@code what} when it would wait on such a thread. */
    public static void refuse(String what) {
        String thread = MARKED.get();
        if (thread != null) {
            throw new IllegalStateException(
                    what + " would wait on " + thread + "; the call must run on a thread of its own");
        }
    }
}
