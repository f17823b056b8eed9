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
import java.util.Map;
import java.util.Optional;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * The Kubernetes API server as a pod reaches it: its Service's address from the environment, its
 * CA, the pod's namespace and its ServiceAccount token from the mounted service account
 * directory. Each request has a deadline, reads the token again (the kubelet replaces a projected
 * token before it expires) and reads no more than {@link #MOST_BYTES} of the answer; an answer
 * the caller does not expect fails with the permission the ServiceAccount lacks, in words.
 */
final class KubernetesApi {

    static final Path SERVICE_ACCOUNT = Path.of("/var/run/secrets/kubernetes.io/serviceaccount");
    /** The most of an answer read: a pod's object is a few KiB, 10,000 of them fit. */
    static final long MOST_BYTES = 64L << 20;
    /** The most of a refusal's body read for its message. */
    private static final long MOST_REFUSAL_BYTES = 16L << 10;

    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    private static final JsonFactory JSON = new JsonFactory();

    /** What the caller makes of an answer of the status given; empty for a status it does not expect. */
    @FunctionalInterface
    interface Answer<T> {
        Optional<T> read(int status, InputStream body) throws IOException;
    }

    private final URI server;
    private final Path tokenFile;
    private final String namespace;
    private final HttpClient http;

    KubernetesApi(URI server, Path tokenFile, String namespace, HttpClient http) {
        this.server = server;
        this.tokenFile = tokenFile;
        this.namespace = namespace;
        this.http = http;
    }

    /** The API server of the pod this process runs in; {@code instead} says what to do outside one. */
    static KubernetesApi inCluster(String instead) {
        Map<String, String> env = System.getenv();
        String host = env.get("KUBERNETES_SERVICE_HOST");
        String port = env.getOrDefault("KUBERNETES_SERVICE_PORT", "443");
        if (host == null || host.isEmpty()) {
            throw new IllegalArgumentException(
                    "not in a Kubernetes pod (KUBERNETES_SERVICE_HOST is unset): " + instead);
        }
        URI server = URI.create("https://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + port);
        Path namespaceFile = SERVICE_ACCOUNT.resolve("namespace");
        String namespace;
        try {
            namespace = Files.readString(namespaceFile).strip();
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read the pod's namespace from " + namespaceFile
                    + ": mount the ServiceAccount's token, CA and namespace there");
        }
        HttpClient http = HttpClient.newBuilder()
                .sslContext(trusting(SERVICE_ACCOUNT.resolve("ca.crt")))
                .connectTimeout(TIMEOUT)
                .build();
        return new KubernetesApi(server, SERVICE_ACCOUNT.resolve("token"), namespace, http);
    }

    /** The namespace of the pod this process runs in. */
    String namespace() {
        return namespace;
    }

    /**
     * Sends one request ({@code json} its body, if any) and returns what {@code answer} makes of
     * the reply. {@code permission} is what the ServiceAccount's Role must allow for it, e.g.
     * "list pods in namespace x", said when the server refuses. Fails UNAVAILABLE: the caller
     * retries later.
     */
    <T> T send(String method, String path, Optional<String> json, String permission, Answer<T> answer) {
        URI uri = server.resolve(path);
        try {
            HttpRequest.Builder request = HttpRequest.newBuilder(uri)
                    .header(
                            "Authorization",
                            "Bearer " + Files.readString(tokenFile).strip())
                    .header("Accept", "application/json")
                    .timeout(TIMEOUT);
            if (json.isPresent()) {
                request.header("Content-Type", "application/json")
                        .method(method, HttpRequest.BodyPublishers.ofString(json.get()));
            } else {
                request.method(method, HttpRequest.BodyPublishers.noBody());
            }
            HttpResponse<InputStream> response = http.send(request.build(), HttpResponse.BodyHandlers.ofInputStream());
            try (InputStream body = response.body()) {
                int status = response.statusCode();
                Optional<T> read = answer.read(status, new BoundedInputStream(body, MOST_BYTES));
                if (read.isPresent()) {
                    return read.get();
                }
                throw refused(
                        method, uri, status, message(new BoundedInputStream(body, MOST_REFUSAL_BYTES)), permission);
            }
        } catch (IOException e) {
            throw StorageException.unavailable("%s %s: %s", method, uri, e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw StorageException.busy("%s %s: interrupted", method, uri);
        }
    }

    private static StorageException refused(String method, URI uri, int status, String message, String permission) {
        String why = message.isEmpty() ? "" : " (" + message + ")";
        return switch (status) {
            case 401 ->
                StorageException.unavailable(
                        "%s %s answered HTTP 401%s: the API server does not take the pod's ServiceAccount token",
                        method, uri, why);
            case 403 ->
                StorageException.unavailable(
                        "%s %s answered HTTP 403%s: the pod's ServiceAccount needs a Role that may %s",
                        method, uri, why, permission);
            default -> StorageException.unavailable("%s %s answered HTTP %d%s", method, uri, status, why);
        };
    }

    /** The {@code message} of a Status object, or nothing when the body is not one. */
    private static String message(InputStream body) {
        try (JsonParser parser = JSON.createParser(body)) {
            if (parser.nextToken() != JsonToken.START_OBJECT) {
                return "";
            }
            while (parser.nextToken() == JsonToken.FIELD_NAME) {
                String field = parser.currentName();
                parser.nextToken();
                if (field.equals("message") && parser.currentToken() == JsonToken.VALUE_STRING) {
                    return parser.getText();
                }
                parser.skipChildren();
            }
            return "";
        } catch (IOException e) {
            return "";
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
        private final long most;
        private long left;

        BoundedInputStream(InputStream in, long most) {
            super(in);
            this.most = most;
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
                throw new IOException("the API server's answer is larger than " + most + " bytes");
            }
            int read = super.read(buffer, offset, (int) Math.min(length, left));
            if (read > 0) {
                left -= read;
            }
            return read;
        }

        @Override
        public void close() {
            // the caller closes the response's stream itself, once
        }
    }
}
