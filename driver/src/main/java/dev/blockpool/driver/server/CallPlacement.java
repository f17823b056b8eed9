package dev.blockpool.driver.server;

import csi.v1.ControllerGrpc;
import csi.v1.GroupControllerGrpc;
import csi.v1.IdentityGrpc;
import csi.v1.NodeGrpc;
import dev.blockpool.common.NoWaiting;
import dev.blockpool.csi.InPlaceCalls;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallExecutorSupplier;
import io.grpc.health.v1.HealthGrpc;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Which thread runs a call. Most calls get a virtual thread of their own: they wait on the pool, on
 * host tools and on system calls that can hang. The calls listed here answer from memory or from
 * what this node's kernel has in memory, and run {@linkplain InPlaceCalls in place} on the
 * transport thread that read them: handing them to another thread and back took longer than the
 * call itself (docs/performance-node.md, "Where a node call's time goes"). NodeGetVolumeStats is
 * answered in place when the volume's path, looked up from the kernel's caches, is its mount; else
 * it goes on on a thread of its own. What waits refuses to run in place, so a call listed here that
 * is ever given such work fails in its tests.
 *
 * <p>Every other call runs on {@link CallThreads}; one that comes when all threads of its kind are
 * taken is placed in place too, to be refused there at once ({@link #refusedForWantOfThreads}).
 */
final class CallPlacement implements ServerCallExecutorSupplier {

    static final Set<String> IN_PLACE = Stream.of(
                    IdentityGrpc.getGetPluginInfoMethod(),
                    IdentityGrpc.getGetPluginCapabilitiesMethod(),
                    ControllerGrpc.getControllerGetCapabilitiesMethod(),
                    GroupControllerGrpc.getGroupControllerGetCapabilitiesMethod(),
                    NodeGrpc.getNodeGetCapabilitiesMethod(),
                    NodeGrpc.getNodeGetInfoMethod(),
                    NodeGrpc.getNodeGetVolumeStatsMethod(),
                    HealthGrpc.getCheckMethod())
            .map(MethodDescriptor::getFullMethodName)
            .collect(Collectors.toUnmodifiableSet());

    private final CallThreads threads;

    /** {@code threads}: where every other call runs, each on a thread of its own. */
    CallPlacement(CallThreads threads) {
        this.threads = threads;
    }

    @Override
    public <ReqT, RespT> Executor getExecutor(ServerCall<ReqT, RespT> call, Metadata headers) {
        String method = call.getMethodDescriptor().getFullMethodName();
        if (IN_PLACE.contains(method)) {
            return InPlaceCalls.EXECUTOR;
        }
        Executor lane = threads.forCall(method);
        return lane != null ? lane : InPlaceCalls.EXECUTOR;
    }

    /**
     * Whether a call of {@code method}, running on the calling thread, was placed in place for want
     * of a thread of its own: then it is to be answered at once, without doing anything.
     */
    static boolean refusedForWantOfThreads(String method) {
        return NoWaiting.here() && !IN_PLACE.contains(method);
    }
}
