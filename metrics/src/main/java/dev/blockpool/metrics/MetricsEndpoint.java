package dev.blockpool.metrics;

import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.util.Map;
import java.util.concurrent.Executors;

/**
 * Serves a registry's metrics at {@code /metrics} in the Prometheus text format, through the
 * Prometheus client's exporter on the JDK's HTTP server. Each scrape runs on a virtual thread
 * of its own: the server then keeps only its dispatcher thread between scrapes, where its
 * default pool would keep platform threads and their stacks (docs/performance.md).
 *
 * <p>Any pod can reach the port, so what a client can make the server hold is bounded
 * ({@link #BOUNDS}): connections (one scrape's thread each), the headers of a request, and how
 * long a request and a response may take. Unbounded, a few hundred connections that never end
 * their headers filled the heap and ended the driver.
 */
public final class MetricsEndpoint implements AutoCloseable {

    /**
     * The JDK server's own limits, read once when its classes initialise; a -D option still wins.
     * Scrapers are one or two Prometheus servers asking every few seconds, with a few short headers.
     */
    static final Map<String, String> BOUNDS = Map.of(
            "jdk.httpserver.maxConnections", "16", // beyond: closed as soon as accepted
            "sun.net.httpserver.maxIdleConnections", "4",
            "sun.net.httpserver.maxReqHeaders", "64",
            "sun.net.httpserver.maxReqHeaderSize", Integer.toString(16 * 1024),
            "sun.net.httpserver.maxReqTime", "10", // seconds to send a request
            "sun.net.httpserver.maxRspTime", "30"); // seconds to take the answer

    private final HTTPServer server;

    private MetricsEndpoint(HTTPServer server) {
        this.server = server;
    }

    public static MetricsEndpoint start(HttpAddress address, PrometheusRegistry registry) throws IOException {
        // Without TCP_NODELAY the JDK's server sends a scrape's last segment only once the client's
        // delayed ACK comes, some 40 ms later (docs/performance.md). Read once, when the server's
        // classes initialise; a -D option still wins.
        System.getProperties().putIfAbsent("sun.net.httpserver.nodelay", "true");
        BOUNDS.forEach(System.getProperties()::putIfAbsent);
        HTTPServer.Builder builder = HTTPServer.builder()
                .port(address.port())
                .registry(registry)
                .executorService(Executors.newVirtualThreadPerTaskExecutor());
        if (!address.host().isEmpty()) {
            builder.hostname(address.host());
        }
        try {
            return new MetricsEndpoint(builder.buildAndStart());
        } catch (IOException e) {
            throw new IOException("cannot serve metrics on " + address + ": " + e.getMessage(), e);
        }
    }

    /** The port it listens on: the one asked for, or the one the system chose for port 0. */
    public int port() {
        return server.getPort();
    }

    @Override
    public void close() {
        server.close();
    }
}
