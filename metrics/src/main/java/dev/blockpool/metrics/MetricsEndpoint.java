package dev.blockpool.metrics;

import com.sun.net.httpserver.Filter;
import com.sun.net.httpserver.HttpServer;
import io.prometheus.metrics.exporter.httpserver.MetricsHandler;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Serves a registry's metrics at {@code /metrics} in the Prometheus text format (or any format the
 * scraper asks for), through the Prometheus client's handler on the JDK's HTTP server. Each scrape
 * runs on a virtual thread of its own: the server then keeps only its dispatcher thread between
 * scrapes, where its default pool would keep platform threads and their stacks
 * (docs/performance-pool.md).
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
            "sun.net.httpserver.maxReqTime", "5", // seconds to send a request
            "sun.net.httpserver.maxRspTime", "10", // seconds to take the answer
            // How often connections past those times, or idle, are looked for and closed: the
            // server can miss a client's close and count the connection until then (seen under
            // load, with no connection left), so a bound of 16 would stay full for as long.
            "sun.net.httpserver.clockTick", "1000");

    /** What answers {@code GET /-/healthy}, as the exporter's own server does: a check that writes no metrics. */
    private static final byte[] HEALTHY = "Exporter is healthy.\n".getBytes(StandardCharsets.UTF_8);

    private final HttpServer server;
    private final ExecutorService scrapes;

    private MetricsEndpoint(HttpServer server, ExecutorService scrapes) {
        this.server = server;
        this.scrapes = scrapes;
    }

    public static MetricsEndpoint start(HttpAddress address, PrometheusRegistry registry) throws IOException {
        // Without TCP_NODELAY the JDK's server sends a scrape's last segment only once the client's
        // delayed ACK comes, some 40 ms later (docs/performance-pool.md). Read once, when the server's
        // classes initialise; a -D option still wins.
        System.getProperties().putIfAbsent("sun.net.httpserver.nodelay", "true");
        BOUNDS.forEach(System.getProperties()::putIfAbsent);
        InetSocketAddress bind = address.host().isEmpty()
                ? new InetSocketAddress(address.port())
                : new InetSocketAddress(address.host(), address.port());
        HttpServer server;
        try {
            server = HttpServer.create(bind, 0);
        } catch (IOException e) {
            throw new IOException("cannot serve metrics on " + address + ": " + e.getMessage(), e);
        }
        ExecutorService scrapes = Executors.newVirtualThreadPerTaskExecutor();
        server.setExecutor(scrapes);
        server.createContext("/metrics", new MetricsHandler(registry))
                .getFilters()
                .add(ONE_EXCHANGE_PER_CONNECTION);
        server.createContext("/-/healthy", exchange -> {
                    exchange.sendResponseHeaders(200, HEALTHY.length);
                    try (var body = exchange.getResponseBody()) {
                        body.write(HEALTHY);
                    }
                })
                .getFilters()
                .add(ONE_EXCHANGE_PER_CONNECTION);
        server.start();
        return new MetricsEndpoint(server, scrapes);
    }

    /**
     * Each connection is closed after its answer: the server reads a connection's next request
     * only when the answer before has gone, so a client that sends many at once (a pipeline) and
     * goes would leave scrape after scrape to be made for nobody, and the port busy long after it.
     * A scraper asks every few seconds; a connection each costs it nothing it would notice.
     */
    private static final Filter ONE_EXCHANGE_PER_CONNECTION = Filter.beforeHandler(
            "one exchange per connection",
            exchange -> exchange.getResponseHeaders().set("Connection", "close"));

    /** The port it listens on: the one asked for, or the one the system chose for port 0. */
    public int port() {
        return server.getAddress().getPort();
    }

    @Override
    public void close() {
        server.stop(0);
        scrapes.shutdownNow();
    }
}
