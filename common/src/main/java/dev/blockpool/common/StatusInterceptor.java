package dev.blockpool.common;

import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns what a service method throws into the RPC's status: a {@link CsiException} into its own
 * code and message, anything unexpected into INTERNAL with the cause in the log. Service methods
 * therefore contain no try/catch ladders.
 */
public final class StatusInterceptor implements ServerInterceptor {

    private static final Logger log = LoggerFactory.getLogger(StatusInterceptor.class);

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
                                                       ServerCallHandler<Q, R> next) {
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
                } catch (StorageException e) {
                    if (e.getCause() != null) {
                        log.debug("{} failed", call.getMethodDescriptor().getFullMethodName(), e);
                    }
                    call.close(CsiException.statusOf(e), new Metadata());
                } catch (CsiException e) {
                    if (e.getCause() != null) {
                        log.debug("{} failed", call.getMethodDescriptor().getFullMethodName(), e);
                    }
                    call.close(e.toStatus(), new Metadata());
                } catch (RuntimeException | Error e) {
                    log.error("{} failed unexpectedly", call.getMethodDescriptor().getFullMethodName(), e);
                    call.close(Status.INTERNAL.withDescription(e.toString()), new Metadata());
                }
            }
        };
    }
}
