package dev.blockpool.peer;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.blockpool.common.StorageException;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * The other nodes as the cluster's Node objects name them: each at its InternalIP and the peer
 * port every node's driver listens on, this node left out. Listed from the API server with the
 * pod's ServiceAccount token (its role may {@code list nodes}), at most every {@link #KEPT}; the
 * answer is read as a stream, and no more than {@link #MOST_BYTES} of it.
 */
final class KubernetesNodes implements PeerDirectory {

    static final Path SERVICE_ACCOUNT = Path.of("/var/run/secrets/kubernetes.io/serviceaccount");
    /** How long a listing is used: nodes come and go over minutes. */
    static final Duration KEPT = Duration.ofSeconds(30);
    /** The most of the API server's answer read: a node's object is a few KiB, 5,000 of them fit. */
    static final long MOST_BYTES = 64L << 20;

    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    private static final JsonFactory JSON = new JsonFactory();

    private final URI nodes;
    private final Path tokenFile;
    private final HttpClient http;
    private final String self;
    private final int port;
    private final InstantSource clock;

    private List<PeerAddress> listed = List.of();
    private Instant listedAt = Instant.MIN;

    KubernetesNodes(URI apiServer, Path tokenFile, HttpClient http, String self, int port, InstantSource clock) {
        this.nodes = apiServer.resolve("/api/v1/nodes");
        this.tokenFile = tokenFile;
        this.http = http;
        this.self = self;
        this.port = port;
        this.clock = clock;
    }

    /** The API server as a pod sees it: its Service's address in the environment, its CA and token mounted. */
    static KubernetesNodes inCluster(String self, int port) {
        Map<String, String> env = System.getenv();
        String host = env.get("KUBERNETES_SERVICE_HOST");
        String servicePort = env.getOrDefault("KUBERNETES_SERVICE_PORT", "443");
        if (host == null || host.isEmpty()) {
            throw new IllegalArgumentException(
                    "not in a Kubernetes pod (KUBERNETES_SERVICE_HOST is unset): give the other nodes with --peer");
        }
        URI apiServer = URI.create("https://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + servicePort);
        HttpClient http = HttpClient.newBuilder()
                .sslContext(trusting(SERVICE_ACCOUNT.resolve("ca.crt")))
                .connectTimeout(TIMEOUT)
                .build();
        return new KubernetesNodes(
                apiServer, SERVICE_ACCOUNT.resolve("token"), http, self, port, InstantSource.system());
    }

    @Override
    public synchronized List<PeerAddress> peers() {
        Instant now = clock.instant();
        if (now.isBefore(listedAt.plus(KEPT))) {
            return listed;
        }
        listed = list();
        listedAt = now;
        return listed;
    }

    private List<PeerAddress> list() {
        try {
            // read at each listing: the kubelet replaces the projected token before it expires
            String token = Files.readString(tokenFile).strip();
            HttpRequest request = HttpRequest.newBuilder(nodes)
                    .header("Authorization", "Bearer " + token)
                    .header("Accept", "application/json")
                    .timeout(TIMEOUT)
                    .GET()
                    .build();
            HttpResponse<InputStream> response = http.send(request, HttpResponse.BodyHandlers.ofInputStream());
            try (InputStream body = response.body()) {
                if (response.statusCode() != 200) {
                    throw StorageException.unavailable(
                            "listing the cluster's nodes at %s answered HTTP %d: the driver's ServiceAccount needs"
                                    + " a ClusterRole that may list nodes",
                            nodes, response.statusCode());
                }
                return parse(new BoundedInputStream(body, MOST_BYTES), self, port);
            }
        } catch (IOException e) {
            throw StorageException.unavailable("listing the cluster's nodes at %s: %s", nodes, e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw StorageException.busy("listing the cluster's nodes: interrupted");
        }
    }

    /** The nodes of a NodeList, each with an InternalIP, less {@code self}. */
    static List<PeerAddress> parse(InputStream nodeList, String self, int port) throws IOException {
        List<PeerAddress> peers = new ArrayList<>();
        try (JsonParser parser = JSON.createParser(nodeList)) {
            expect(parser.nextToken(), JsonToken.START_OBJECT);
            while (parser.nextToken() == JsonToken.FIELD_NAME) {
                String field = parser.currentName();
                parser.nextToken();
                if (field.equals("items") && parser.currentToken() == JsonToken.START_ARRAY) {
                    while (parser.nextToken() == JsonToken.START_OBJECT) {
                        node(parser)
                                .filter(node -> !node.name().equals(self))
                                .flatMap(node -> node.internalIp().map(ip -> new PeerAddress(node.name(), ip, port)))
                                .ifPresent(peers::add);
                    }
                } else {
                    parser.skipChildren();
                }
            }
        }
        return peers;
    }

    private record Node(String name, Optional<String> internalIp) {}

    /** One Node object, the parser at its START_OBJECT; leaves it at its END_OBJECT. */
    private static Optional<Node> node(JsonParser parser) throws IOException {
        String name = null;
        Optional<String> internalIp = Optional.empty();
        while (parser.nextToken() == JsonToken.FIELD_NAME) {
            String field = parser.currentName();
            parser.nextToken();
            if (field.equals("metadata") && parser.currentToken() == JsonToken.START_OBJECT) {
                name = stringField(parser, "name").orElse(name);
            } else if (field.equals("status") && parser.currentToken() == JsonToken.START_OBJECT) {
                internalIp = internalIp(parser);
            } else {
                parser.skipChildren();
            }
        }
        return name == null ? Optional.empty() : Optional.of(new Node(name, internalIp));
    }

    /** status.addresses' first InternalIP, the parser at status' START_OBJECT; leaves it at its end. */
    private static Optional<String> internalIp(JsonParser parser) throws IOException {
        Optional<String> found = Optional.empty();
        while (parser.nextToken() == JsonToken.FIELD_NAME) {
            String field = parser.currentName();
            parser.nextToken();
            if (field.equals("addresses") && parser.currentToken() == JsonToken.START_ARRAY) {
                while (parser.nextToken() == JsonToken.START_OBJECT) {
                    String type = null;
                    String address = null;
                    while (parser.nextToken() == JsonToken.FIELD_NAME) {
                        String key = parser.currentName();
                        parser.nextToken();
                        if (key.equals("type")) {
                            type = parser.getValueAsString();
                        } else if (key.equals("address")) {
                            address = parser.getValueAsString();
                        } else {
                            parser.skipChildren();
                        }
                    }
                    if (found.isEmpty() && "InternalIP".equals(type) && address != null) {
                        found = Optional.of(address);
                    }
                }
            } else {
                parser.skipChildren();
            }
        }
        return found;
    }

    /** A string field of the object the parser is at; leaves it at the object's end. */
    private static Optional<String> stringField(JsonParser parser, String name) throws IOException {
        Optional<String> found = Optional.empty();
        while (parser.nextToken() == JsonToken.FIELD_NAME) {
            String field = parser.currentName();
            parser.nextToken();
            if (field.equals(name) && parser.currentToken() == JsonToken.VALUE_STRING) {
                found = Optional.of(parser.getText());
            } else {
                parser.skipChildren();
            }
        }
        return found;
    }

    private static void expect(JsonToken actual, JsonToken expected) throws IOException {
        if (actual != expected) {
            throw new IOException("the API server's answer is not a NodeList");
        }
    }

    private static SSLContext trusting(Path caFile) {
        try {
            KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
            store.load(null, null);
            int i = 0;
            for (X509Certificate certificate : Pem.certificates(Files.readAllBytes(caFile), caFile.toString())) {
                store.setCertificateEntry("ca-" + i++, certificate);
            }
            TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            trust.init(store);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, trust.getTrustManagers(), null);
            return context;
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalArgumentException("cannot read the API server's CA " + caFile + ": " + e.getMessage(), e);
        }
    }

    /** Fails a read past {@code most} bytes: the API server's answer is not trusted to be small. */
    private static final class BoundedInputStream extends FilterInputStream {
        private long left;

        BoundedInputStream(InputStream in, long most) {
            super(in);
            this.left = most;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] buffer, int offset, int length) throws IOException {
            if (left <= 0) {
                throw new IOException("the node list is larger than " + MOST_BYTES + " bytes");
            }
            int read = super.read(buffer, offset, (int) Math.min(length, left));
            if (read > 0) {
                left -= read;
            }
            return read;
        }
    }
}
