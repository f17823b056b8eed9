package dev.blockpool.node;

import io.grpc.stub.StreamObserver;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiConsumer;

/** Calls a service method directly, as the gRPC server would, and returns its single response. */
final class Calls {

    private Calls() {
    }

    static <Q, R> R call(BiConsumer<Q, StreamObserver<R>> method, Q request) {
        AtomicReference<R> value = new AtomicReference<>();
        AtomicReference<Throwable> error = new AtomicReference<>();
        method.accept(request, new StreamObserver<>() {
            @Override
            public void onNext(R r) {
                value.set(r);
            }

            @Override
            public void onError(Throwable t) {
                error.set(t);
            }

            @Override
            public void onCompleted() {
            }
        });
        if (error.get() != null) {
            throw new AssertionError("the call failed through onError", error.get());
        }
        if (value.get() == null) {
            throw new AssertionError("the call completed without a response");
        }
        return value.get();
    }
}
