package dev.blockpool.csi;

import dev.blockpool.common.NoWaiting;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Supplier;

/**
 * The calls that run on the gRPC transport thread that read them, rather than on a thread of
 * their own: the few that answer from memory and from this node's kernel alone, where handing a
 * call to another thread and back would cost more than the call. Such a call must never wait on
 * something that can hang, since the transport thread serves other calls too: the thread is
 * marked {@link NoWaiting} while the call runs, so what waits refuses to run on it and a call
 * given work it must not do fails in every test that makes it, instead of stalling a node's calls
 * one day. The server places calls here (the driver's CallPlacement); a service whose call may
 * have to look further hands the rest {@link #elsewhere}, to threads with a ceiling.
 */
public final class InPlaceCalls {

    private static final String TRANSPORT_THREAD = "the gRPC transport thread, which serves other calls";

    /** Runs a call's work on the calling thread, marked as in place while it runs. */
    public static final Executor EXECUTOR = work -> NoWaiting.run(TRANSPORT_THREAD, work);

    private InPlaceCalls() {}

    /**
     * Answers a call with what {@code work} gives, where it may wait: on {@code threads} when the
     * call runs in place, else right here. For a call that is answered in place when it can be
     * and has to look further when not. When {@code threads} refuse the work (all taken), the call
     * is answered at once that it is to be retried.
     */
    public static <T> void elsewhere(Executor threads, StreamObserver<T> response, String method, Supplier<T> work) {
        if (!NoWaiting.here()) {
            UnaryReply.sendFrom(response, method, work);
            return;
        }
        try {
            threads.execute(() -> UnaryReply.sendFrom(response, method, work));
        } catch (RejectedExecutionException e) {
            response.onError(Status.fromCode(StatusInterceptor.RETRY_LATER)
                    .withDescription("refused: " + e.getMessage() + "; retry later")
                    .asRuntimeException());
        }
    }
}
