package dev.blockpool.peer;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A Kubernetes API server on 127.0.0.1, over plain HTTP: each method and path answers the status
 * and body set for it (404 otherwise), and every request is kept to be looked at.
 */
final class FakeApiServer implements AutoCloseable {

    record Request(String method, String pathAndQuery, String authorization, String body) {}

    private record Reply(int status, String body) {}

    private final HttpServer server;
    private final Map<String, Reply> replies = new ConcurrentHashMap<>();
    private final List<Request> requests = new CopyOnWriteArrayList<>();

    FakeApiServer() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", exchange -> {
            String body;
            try (InputStream in = exchange.getRequestBody()) {
                body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
            URI uri = exchange.getRequestURI();
            requests.add(new Request(
                    exchange.getRequestMethod(),
                    uri.getRawPath() + (uri.getRawQuery() == null ? "" : "?" + uri.getRawQuery()),
                    exchange.getRequestHeaders().getFirst("Authorization"),
                    body));
            Reply reply = replies.getOrDefault(
                    exchange.getRequestMethod() + " " + uri.getRawPath(),
                    new Reply(404, "{\"kind\":\"Status\",\"message\":\"not found\",\"code\":404}"));
            byte[] bytes = reply.body().getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(reply.status(), bytes.length == 0 ? -1 : bytes.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
            }
        });
        server.start();
    }

    /** From now on, {@code method path} answers this. */
    void reply(String method, String path, int status, String body) {
        replies.put(method + " " + path, new Reply(status, body));
    }

    List<Request> requests() {
        return List.copyOf(requests);
    }

    /** A client of this server, as a pod of {@code namespace} with its token in {@code tokenFile}. */
    KubernetesApi api(Path tokenFile, String namespace) {
        return new KubernetesApi(
                URI.create("http://127.0.0.1:" + server.getAddress().getPort()),
                tokenFile,
                namespace,
                HttpClient.newHttpClient());
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
