package dev.blockpool.metrics;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The per-call histogram that kubernetes-csi's csi-lib-utils defines for CSI drivers, with its
 * name, labels, help and buckets, so that one dashboard reads the driver beside its sidecars
 * (which serve the same histogram as {@code csi_sidecar_operations_seconds}): the method as gRPC
 * names it on the wire ({@code /csi.v1.Node/NodeStageVolume}) and the status code as grpc-go
 * spells it ({@code FailedPrecondition}). A call is observed when its status is sent, so it is
 * counted with the code the CO sees, or when the CO cancels it or its deadline passes first.
 */
public final class CallHistogram implements ServerInterceptor {

    static final String NAME = "csi_plugin_operations_seconds";
    /** csi-lib-utils' operationsLatencyBuckets. */
    static final double[] BUCKETS = {.1, .25, .5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600};

    private final Histogram seconds;
    private final String driverName;

    public CallHistogram(PrometheusRegistry registry, String driverName) {
        this.driverName = driverName;
        this.seconds = Histogram.builder()
                .name(NAME)
                .help("Container Storage Interface operation duration with gRPC error code status total")
                .labelNames("driver_name", "method_name", "grpc_status_code")
                .classicOnly()
                .classicUpperBounds(BUCKETS)
                .withoutExemplars()
                .register(registry);
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        long started = System.nanoTime();
        String method = "/" + call.getMethodDescriptor().getFullMethodName();
        AtomicBoolean observed = new AtomicBoolean();
        ServerCall<Q, R> observing = new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
            @Override
            public void close(Status status, Metadata trailers) {
                record(observed, method, status.getCode(), started);
                super.close(status, trailers);
            }
        };
        return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(
                next.startCall(observing, headers)) {
            @Override
            public void onCancel() {
                // The CO gave up (or its deadline passed) before the call answered: that is what it saw.
                Status cancelled = Contexts.statusFromCancelled(Context.current());
                record(observed, method, cancelled != null ? cancelled.getCode() : Status.Code.CANCELLED, started);
                super.onCancel();
            }
        };
    }

    private void record(AtomicBoolean observed, String method, Status.Code code, long started) {
        if (observed.compareAndSet(false, true)) {
            seconds.labelValues(driverName, method, goName(code)).observe((System.nanoTime() - started) / 1e9);
        }
    }

    /** A status code as grpc-go's codes.Code.String() spells it, which csi-lib-utils writes into the label. */
    static String goName(Status.Code code) {
        return switch (code) {
            case OK -> "OK";
            case CANCELLED -> "Canceled";
            case UNKNOWN -> "Unknown";
            case INVALID_ARGUMENT -> "InvalidArgument";
            case DEADLINE_EXCEEDED -> "DeadlineExceeded";
            case NOT_FOUND -> "NotFound";
            case ALREADY_EXISTS -> "AlreadyExists";
            case PERMISSION_DENIED -> "PermissionDenied";
            case RESOURCE_EXHAUSTED -> "ResourceExhausted";
            case FAILED_PRECONDITION -> "FailedPrecondition";
            case ABORTED -> "Aborted";
            case OUT_OF_RANGE -> "OutOfRange";
            case UNIMPLEMENTED -> "Unimplemented";
            case INTERNAL -> "Internal";
            case UNAVAILABLE -> "Unavailable";
            case DATA_LOSS -> "DataLoss";
            case UNAUTHENTICATED -> "Unauthenticated";
        };
    }
}
