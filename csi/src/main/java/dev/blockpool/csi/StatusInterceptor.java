package dev.blockpool.csi;

import dev.blockpool.common.StorageException;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one place where failures become CSI status codes: a {@link CsiException} keeps its own
 * code, a {@link StorageException} is mapped by its kind, anything unexpected is INTERNAL with
 * the cause in the log and a message that names no Java class. Service methods therefore
 * contain no try/catch ladders.
 */
public final class StatusInterceptor implements ServerInterceptor {

    private static final Logger log = LoggerFactory.getLogger(StatusInterceptor.class);

    /**
     * The answer to a call that could not finish in time because what it needs does not answer
     * (the pool's server gone, a system call left in the kernel): UNAVAILABLE. kubelet and every
     * sidecar (their isFinalError) take it, like DEADLINE_EXCEEDED, as "not final, may still be
     * in progress", keep the operation pending and retry it with backoff; of the two it is the one
     * a server says of itself (DEADLINE_EXCEEDED is the client's word for its own deadline).
     * Every such answer of the driver uses this code, from here and from the driver's CallDeadlines.
     */
    public static final Status.Code RETRY_LATER = Status.Code.UNAVAILABLE;

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        ServerCall.Listener<Q> delegate = next.startCall(call, headers);
        return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(delegate) {
            @Override
            public void onMessage(Q message) {
                guard(() -> super.onMessage(message));
            }

            @Override
            public void onHalfClose() {
                guard(super::onHalfClose);
            }

            private void guard(Runnable step) {
                try {
                    step.run();
                } catch (RuntimeException | Error e) {
                    call.close(statusOf(call.getMethodDescriptor().getFullMethodName(), e), new Metadata());
                }
            }
        };
    }

    /** The status a CO sees for a failure; unexpected ones are logged with their stack. */
    public static Status statusOf(String method, Throwable failure) {
        if (failure instanceof CsiException e) {
            logCause(method, e);
            return e.toStatus();
        }
        if (failure instanceof StorageException e) {
            logCause(method, e);
            return Status.fromCode(codeOf(e.kind())).withDescription(e.getMessage());
        }
        log.error("{} failed unexpectedly", method, failure);
        return Status.INTERNAL.withDescription("unexpected error in the driver; its log has the details");
    }

    /** The CSI code for each kind of storage failure. */
    static Status.Code codeOf(StorageException.Kind kind) {
        return switch (kind) {
            case INVALID -> Status.Code.INVALID_ARGUMENT;
            case NOT_FOUND -> Status.Code.NOT_FOUND;
            case CONFLICT -> Status.Code.ALREADY_EXISTS;
            case BUSY -> Status.Code.ABORTED;
            case PRECONDITION -> Status.Code.FAILED_PRECONDITION;
            case OUT_OF_RANGE -> Status.Code.OUT_OF_RANGE;
            case EXHAUSTED -> Status.Code.RESOURCE_EXHAUSTED;
            case UNAVAILABLE -> RETRY_LATER;
            case INTERNAL -> Status.Code.INTERNAL;
        };
    }

    /** The status message says what failed; the cause's stack is for the debug log only. */
    private static void logCause(String method, RuntimeException e) {
        if (e.getCause() != null) {
            log.debug("{} failed", method, e);
        }
    }
}
