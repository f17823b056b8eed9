package dev.blockpool.metrics;

import dev.blockpool.node.NodeCensus;
import dev.blockpool.pool.PoolCensus;
import io.grpc.ServerInterceptor;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntSupplier;
import java.util.function.Supplier;

/**
 * Everything the driver's {@code --http-endpoint} serves: the build info and the call histogram
 * always, the pool's gauges where the controller serves ({@link #countPool}), the node's where
 * the node serves ({@link #countNode}). One registry, one
 * endpoint; nothing of it exists when no endpoint is asked for.
 */
public final class DriverMetrics implements AutoCloseable {

    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final CallHistogram calls;
    /** What stops with it: the background work of its gauges. */
    private final List<Runnable> stops = new ArrayList<>();

    private final MetricsEndpoint endpoint;

    private DriverMetrics(HttpAddress address, BuildInfo.Build build) throws IOException {
        BuildInfo.register(registry, build);
        this.calls = new CallHistogram(registry, build.driverName());
        this.endpoint = MetricsEndpoint.start(address, registry);
    }

    /** Serves the build info and the call histogram on {@code address} from now on. */
    public static DriverMetrics serve(HttpAddress address, BuildInfo.Build build) throws IOException {
        return new DriverMetrics(address, build);
    }

    /** The interceptor that counts the calls: to go around every other, to see what the client sees. */
    public ServerInterceptor calls() {
        return calls;
    }

    /** Adds the pool's gauges, from a census taken in the background; see {@link PoolGauges}. */
    public void countPool(Supplier<PoolCensus.Figures> take) {
        LastCensus<PoolCensus.Figures> census = LastCensus.start("pool", take);
        PoolGauges.register(registry, census);
        stops.add(census::close);
    }

    /** Adds the node's gauges, from a census taken in the background; see {@link NodeGauges}. */
    public void countNode(Supplier<NodeCensus.Figures> take) {
        LastCensus<NodeCensus.Figures> census = LastCensus.start("node", take);
        NodeGauges.register(registry, census);
        stops.add(census::close);
    }

    /** Adds {@code blockpool_node_frozen_volumes}, read from memory at each scrape; see {@link NodeGauges}. */
    public void countFrozen(IntSupplier frozen) {
        NodeGauges.registerFrozen(registry, frozen);
    }

    /** The port it serves on. */
    public int port() {
        return endpoint.port();
    }

    @Override
    public void close() {
        endpoint.close();
        stops.forEach(Runnable::run);
    }
}
