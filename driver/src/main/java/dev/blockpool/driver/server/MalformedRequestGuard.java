package dev.blockpool.driver.server;

import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Answers a request whose bytes are not a message of its method INVALID_ARGUMENT. gRPC parses a
 * request before any interceptor of the typed service sees it, and a parse failure there ends
 * the call UNKNOWN ("Application error processing RPC") with a stack trace in the log; so the
 * service is served on raw bytes ({@link #wrap}) and this guard is where they are parsed. A flood
 * of such requests writes one log line per interval, with the count.
 */
final class MalformedRequestGuard implements ServerInterceptor {

    private static final Logger log = LoggerFactory.getLogger("rpc");
    private static final long LOG_INTERVAL_NANOS = Duration.ofSeconds(10).toNanos();

    private final AtomicLong lastLogged = new AtomicLong(System.nanoTime() - LOG_INTERVAL_NANOS);
    private final AtomicLong unlogged = new AtomicLong();

    /** The service on raw request bytes, parsed by this guard before the service's own interceptors. */
    ServerServiceDefinition wrap(ServerServiceDefinition typedService) {
        return ServerInterceptors.intercept(ServerInterceptors.useInputStreamMessages(typedService), this);
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        ServerCall.Listener<Q> delegate = next.startCall(call, headers);
        return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(delegate) {
            private boolean rejected;

            @Override
            public void onMessage(Q message) {
                if (rejected) {
                    return;
                }
                try {
                    super.onMessage(message); // parses the bytes, then the typed service takes over
                } catch (StatusRuntimeException e) {
                    rejected = true;
                    reject(call, e);
                }
            }

            @Override
            public void onHalfClose() {
                if (!rejected) {
                    super.onHalfClose();
                }
            }
        };
    }

    private void reject(ServerCall<?, ?> call, StatusRuntimeException parseFailure) {
        String method = call.getMethodDescriptor().getFullMethodName();
        String description = "the request is not a valid " + method + " message: "
                + (parseFailure.getCause() != null
                        ? parseFailure.getCause().getMessage()
                        : parseFailure.getStatus().getDescription());
        call.close(Status.INVALID_ARGUMENT.withDescription(description), new Metadata());
        long now = System.nanoTime();
        long last = lastLogged.get();
        if (now - last >= LOG_INTERVAL_NANOS && lastLogged.compareAndSet(last, now)) {
            long others = unlogged.getAndSet(0);
            log.warn(
                    "{} -> INVALID_ARGUMENT: {}{}",
                    method,
                    description,
                    others == 0 ? "" : " (and " + others + " more malformed requests since the last such line)");
        } else {
            unlogged.incrementAndGet();
        }
    }
}
