package dev.blockpool.csi;

import io.grpc.stub.StreamObserver;

/** Every CSI RPC is unary: one response, then done. */
public final class UnaryReply {

    private UnaryReply() {
    }

    public static <T> void send(StreamObserver<T> response, T message) {
        response.onNext(message);
        response.onCompleted();
    }
}
