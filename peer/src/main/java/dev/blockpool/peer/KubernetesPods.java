package dev.blockpool.peer;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.io.InputStream;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The other nodes as the node plugin's own pods show them: the pods of the driver's namespace
 * that the label selector ({@code --peer-selector}) picks, each Running pod's node at its pod IP
 * and the port every node's driver listens on, this node left out. Pods, not Nodes: a pod's IP
 * reaches its driver without hostNetwork or a hostPort, and the namespace's Role need only
 * {@code list pods}. Listed at most every {@link #KEPT}.
 */
final class KubernetesPods implements PeerDirectory {

    /** How long a listing is used: node plugins come and go over minutes. */
    static final Duration KEPT = Duration.ofSeconds(30);

    private static final JsonFactory JSON = new JsonFactory();

    private final KubernetesApi api;
    private final String selector;
    private final String self;
    private final int port;
    private final InstantSource clock;

    private List<PeerAddress> listed = List.of();
    private Instant listedAt = Instant.MIN;

    KubernetesPods(KubernetesApi api, String selector, String self, int port, InstantSource clock) {
        this.api = api;
        this.selector = selector;
        this.self = self;
        this.port = port;
        this.clock = clock;
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
        String path = "/api/v1/namespaces/" + api.namespace() + "/pods?labelSelector="
                + URLEncoder.encode(selector, StandardCharsets.UTF_8);
        return api.send(
                "GET",
                path,
                Optional.empty(),
                "list pods in namespace " + api.namespace(),
                (status, body) -> status == 200 ? Optional.of(parse(body, self, port)) : Optional.empty());
    }

    /**
     * The nodes of a PodList's Running pods that have an IP and are not being deleted, one
     * address a node, less {@code self}.
     */
    static List<PeerAddress> parse(InputStream podList, String self, int port) throws IOException {
        List<PeerAddress> peers = new ArrayList<>();
        Set<String> nodes = new HashSet<>(Set.of(self));
        try (JsonParser parser = JSON.createParser(podList)) {
            if (parser.nextToken() != JsonToken.START_OBJECT) {
                throw new IOException("the API server's answer is not a PodList");
            }
            while (parser.nextToken() == JsonToken.FIELD_NAME) {
                String field = parser.currentName();
                parser.nextToken();
                if (field.equals("items") && parser.currentToken() == JsonToken.START_ARRAY) {
                    while (parser.nextToken() == JsonToken.START_OBJECT) {
                        pod(parser)
                                .filter(pod -> nodes.add(pod.node()))
                                .ifPresent(pod -> peers.add(new PeerAddress(pod.node(), pod.ip(), port)));
                    }
                } else {
                    parser.skipChildren();
                }
            }
        }
        return peers;
    }

    private record Pod(String node, String ip) {}

    /** One Pod object, the parser at its START_OBJECT, if it serves; leaves the parser at its END_OBJECT. */
    private static Optional<Pod> pod(JsonParser parser) throws IOException {
        String node = null;
        String ip = null;
        String phase = null;
        boolean deleting = false;
        while (parser.nextToken() == JsonToken.FIELD_NAME) {
            String field = parser.currentName();
            JsonToken value = parser.nextToken();
            if (value != JsonToken.START_OBJECT) {
                parser.skipChildren();
                continue;
            }
            switch (field) {
                case "metadata" -> deleting = strings(parser, "deletionTimestamp")[0] != null;
                case "spec" -> node = strings(parser, "nodeName")[0];
                case "status" -> {
                    String[] status = strings(parser, "phase", "podIP");
                    phase = status[0];
                    ip = status[1];
                }
                default -> parser.skipChildren();
            }
        }
        boolean serves = node != null && ip != null && !ip.isEmpty() && "Running".equals(phase) && !deleting;
        return serves ? Optional.of(new Pod(node, ip)) : Optional.empty();
    }

    /** The string fields {@code names} of the object the parser is at (null where absent); leaves it at its end. */
    private static String[] strings(JsonParser parser, String... names) throws IOException {
        String[] found = new String[names.length];
        List<String> wanted = List.of(names);
        while (parser.nextToken() == JsonToken.FIELD_NAME) {
            int index = wanted.indexOf(parser.currentName());
            parser.nextToken();
            if (index >= 0 && parser.currentToken() == JsonToken.VALUE_STRING) {
                found[index] = parser.getText();
            } else {
                parser.skipChildren();
            }
        }
        return found;
    }
}
