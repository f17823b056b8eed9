package dev.blockpool.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import dev.blockpool.common.StorageException;
import java.io.ByteArrayInputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The other nodes read from the API server's NodeList. */
class KubernetesNodesTest {

    private static final String NODE_LIST = """
            {"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"42"},
             "items":[
              {"metadata":{"name":"node-a","labels":{"x":"y"}},"spec":{"podCIDR":"10.1.0.0/24"},
               "status":{"addresses":[{"type":"InternalIP","address":"10.0.0.1"},{"type":"Hostname","address":"a"}]}},
              {"metadata":{"name":"node-b"},
               "status":{"conditions":[{"type":"Ready","status":"True"}],
                         "addresses":[{"type":"Hostname","address":"b"},{"type":"InternalIP","address":"10.0.0.2"},
                                      {"type":"InternalIP","address":"fd00::2"}]}},
              {"metadata":{"name":"node-without-ip"},"status":{"addresses":[{"type":"Hostname","address":"c"}]}}
             ]}
            """;

    @TempDir
    Path dir;

    private HttpServer apiServer;
    private final AtomicInteger status = new AtomicInteger(200);
    private final List<String> authorizations = new CopyOnWriteArrayList<>();
    private final AtomicReference<Instant> now = new AtomicReference<>(Instant.parse("2026-01-01T00:00:00Z"));
    private Path token;

    @BeforeEach
    void serveNodes() throws Exception {
        token = Files.writeString(dir.resolve("token"), "token-1\n");
        apiServer = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        apiServer.createContext("/api/v1/nodes", exchange -> {
            authorizations.add(exchange.getRequestHeaders().getFirst("Authorization"));
            byte[] body = NODE_LIST.getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(status.get(), body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        apiServer.start();
    }

    @AfterEach
    void stop() {
        apiServer.stop(0);
    }

    @Test
    void eachOtherNodeAtItsInternalIp() throws Exception {
        assertThat(KubernetesNodes.parse(
                        new ByteArrayInputStream(NODE_LIST.getBytes(StandardCharsets.UTF_8)), "node-a", 9810))
                .containsExactly(new PeerAddress("node-b", "10.0.0.2", 9810));
    }

    @Test
    void listedWithTheCurrentTokenAndKeptForAWhile() throws Exception {
        KubernetesNodes nodes = nodes();

        assertThat(nodes.peers()).containsExactly(new PeerAddress("node-b", "10.0.0.2", 9810));
        now.set(now.get().plus(KubernetesNodes.KEPT).minusSeconds(1));
        assertThat(nodes.peers()).hasSize(1);
        assertThat(authorizations).containsExactly("Bearer token-1");

        Files.writeString(token, "token-2"); // the kubelet rotated it
        now.set(now.get().plusSeconds(1));
        assertThat(nodes.peers()).hasSize(1);
        assertThat(authorizations).containsExactly("Bearer token-1", "Bearer token-2");
    }

    @Test
    void aRefusalSaysWhatTheServiceAccountNeeds() {
        status.set(403);

        assertThatThrownBy(() -> nodes().peers())
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.UNAVAILABLE))
                .hasMessageContaining("HTTP 403")
                .hasMessageContaining("list nodes");
    }

    private KubernetesNodes nodes() {
        return new KubernetesNodes(
                URI.create("http://127.0.0.1:" + apiServer.getAddress().getPort()),
                token,
                HttpClient.newHttpClient(),
                "node-a",
                9810,
                now::get);
    }
}
