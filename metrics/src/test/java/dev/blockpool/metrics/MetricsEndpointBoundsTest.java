package dev.blockpool.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What a client of the metrics port, which any pod can reach, can make the server hold: a
 * request's headers and the connections are bounded, and what goes beyond is closed, not kept; a
 * connection gets one answer, however many requests it sent ahead.
 */
class MetricsEndpointBoundsTest {

    private static final int SEVERAL_SECONDS = 5_000;

    private MetricsEndpoint endpoint;
    /** Scrapes the server made: each reads this gauge once. */
    private final AtomicInteger scrapes = new AtomicInteger();

    /** A server of its own for each test: what one test leaves open is no other's concern. */
    @BeforeEach
    void start() throws IOException {
        PrometheusRegistry registry = new PrometheusRegistry();
        Gauge.builder().name("bounds_test").register(registry).set(1);
        GaugeWithCallback.builder()
                .name("bounds_test_scrapes")
                .callback(callback -> callback.call(scrapes.incrementAndGet()))
                .register(registry);
        endpoint = MetricsEndpoint.start(new HttpAddress("127.0.0.1", 0), registry);
    }

    @AfterEach
    void stop() {
        endpoint.close();
    }

    @Test
    void headersBeyondTheBoundEndTheConnection() throws IOException {
        try (Socket client = connect()) {
            OutputStream out = client.getOutputStream();
            try {
                out.write(("GET /metrics HTTP/1.1\r\nHost: scraper\r\n").getBytes(StandardCharsets.US_ASCII));
                for (int i = 0; i < 40; i++) { // 40 KiB of headers, the request never ended
                    out.write(("X-Pad-" + i + ": " + "a".repeat(1000) + "\r\n").getBytes(StandardCharsets.US_ASCII));
                }
                out.flush();
            } catch (IOException closed) {
                // the server let go while the headers were still coming
            }
            assertThat(answerOrEnd(client)).as("the server's answer").isNotEqualTo(Answer.WAITING);
        }
    }

    @Test
    void connectionsBeyondTheBoundAreClosedAtOnce() throws IOException {
        int bound = Integer.parseInt(MetricsEndpoint.BOUNDS.get("jdk.httpserver.maxConnections"));
        List<Socket> clients = new ArrayList<>();
        try {
            for (int i = 0; i < bound + 20; i++) {
                Socket client = connect();
                clients.add(client);
                // a request begun and never ended: the server holds the connection while it waits
                client.getOutputStream().write("GET /metrics HTTP/1.1\r\n".getBytes(StandardCharsets.US_ASCII));
            }
            int closed = 0;
            for (Socket client : clients.subList(bound, clients.size())) {
                closed += answerOrEnd(client) == Answer.WAITING ? 0 : 1;
            }
            assertThat(closed).as("connections beyond %d closed", bound).isEqualTo(20);
        } finally {
            for (Socket client : clients) {
                client.close();
            }
        }
    }

    @Test
    void requestsSentAheadOnOneConnectionGetOneScrapeAndTheConnectionEnds() throws IOException {
        try (Socket client = connect()) {
            // A pipeline, from a client that may be gone by the time of the second answer.
            client.getOutputStream()
                    .write("GET /metrics HTTP/1.1\r\nHost: scraper\r\n\r\n"
                            .repeat(20)
                            .getBytes(StandardCharsets.US_ASCII));
            // The answer itself may be lost: closed with requests unread, the connection is reset.
            assertThat(answerOrEnd(client)).as("the server's answer").isEqualTo(Answer.ENDED);
        }
        assertThat(scrapes.get())
                .as("scrapes made for 20 requests on one connection")
                .isEqualTo(1);
    }

    private enum Answer {
        /** Nothing came and the connection is still open. */
        WAITING,
        /** The server closed it, or answered and closed it. */
        ENDED
    }

    private Socket connect() throws IOException {
        Socket client = new Socket();
        client.connect(new InetSocketAddress("127.0.0.1", endpoint.port()), SEVERAL_SECONDS);
        client.setSoTimeout(SEVERAL_SECONDS);
        return client;
    }

    /** Reads what the server sends until it closes the connection, for several seconds at most. */
    private static Answer answerOrEnd(Socket client) {
        try {
            InputStream in = client.getInputStream();
            while (in.read() >= 0) {
                // an error status line before the close; read on to the end
            }
            return Answer.ENDED;
        } catch (SocketTimeoutException e) {
            return Answer.WAITING;
        } catch (IOException reset) {
            return Answer.ENDED;
        }
    }
}
