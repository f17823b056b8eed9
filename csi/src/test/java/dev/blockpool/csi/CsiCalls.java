package dev.blockpool.csi;

import com.google.protobuf.Message;
import csi.v1.ControllerGrpc;
import csi.v1.IdentityGrpc;
import csi.v1.NodeGrpc;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.MethodDescriptor;
import io.grpc.ServiceDescriptor;
import io.grpc.stub.ClientCalls;
import java.util.stream.Stream;

/**
 * Calls the CSI method a request is for, found by the request's type: a parameterised test then
 * holds its cases as requests, for whichever methods share the rule it checks.
 */
public final class CsiCalls {

    private CsiCalls() {}

    /** The response of the unary CSI method that takes {@code request}, called on {@code channel}. */
    public static Message call(Channel channel, Message request) {
        return ClientCalls.blockingUnaryCall(channel, methodFor(request), CallOptions.DEFAULT, request);
    }

    @SuppressWarnings("unchecked") // the request's type is the method's, checked by the filter
    private static MethodDescriptor<Message, Message> methodFor(Message request) {
        return Stream.of(
                        IdentityGrpc.getServiceDescriptor(),
                        ControllerGrpc.getServiceDescriptor(),
                        NodeGrpc.getServiceDescriptor())
                .map(ServiceDescriptor::getMethods)
                .flatMap(methods -> methods.stream())
                .filter(method -> method.getType() == MethodDescriptor.MethodType.UNARY)
                .filter(method -> method.getRequestMarshaller() instanceof MethodDescriptor.PrototypeMarshaller<?> m
                        && m.getMessagePrototype().getClass() == request.getClass())
                .map(method -> (MethodDescriptor<Message, Message>) method)
                .findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no unary CSI method takes a "
                        + request.getDescriptorForType().getName()));
    }
}
