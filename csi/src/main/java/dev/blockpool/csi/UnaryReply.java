package dev.blockpool.csi;

import io.grpc.stub.StreamObserver;
import java.util.function.Supplier;

/** Every CSI RPC is unary: one response, then done. */
public final class UnaryReply {

    private UnaryReply() {}

    public static <T> void send(StreamObserver<T> response, T message) {
        response.onNext(message);
        response.onCompleted();
    }

    /**
     * Sends what {@code work} answers, or the status its failure maps to: for a call finished on
     * another thread than the one gRPC called, where {@link StatusInterceptor} no longer sees it.
     */
    public static <T> void sendFrom(StreamObserver<T> response, String method, Supplier<T> work) {
        T message;
        try {
            message = work.get();
        } catch (RuntimeException | Error e) {
            response.onError(StatusInterceptor.statusOf(method, e).asRuntimeException());
            return;
        }
        send(response, message);
    }
}
