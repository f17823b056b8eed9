package dev.blockpool.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.StorageException;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The other nodes read from the node plugin's pods, as the API server lists them. */
class KubernetesPodsTest {

    private static final String PODS = "/api/v1/namespaces/blockpool-system/pods";
    private static final String POD_LIST = """
            {"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"42"},
             "items":[
              {"metadata":{"name":"blockpool-node-a","labels":{"app.kubernetes.io/name":"blockpool-node"}},
               "spec":{"nodeName":"node-a","containers":[{"name":"blockpool"}]},
               "status":{"phase":"Running","podIP":"10.244.0.5","podIPs":[{"ip":"10.244.0.5"}]}},
              {"metadata":{"name":"blockpool-node-b"},
               "spec":{"nodeName":"node-b"},
               "status":{"conditions":[{"type":"Ready","status":"True"}],"phase":"Running","podIP":"10.244.1.7"}},
              {"metadata":{"name":"blockpool-node-c"},"spec":{"nodeName":"node-c"},"status":{"phase":"Pending"}},
              {"metadata":{"name":"blockpool-node-d-old","deletionTimestamp":"2026-01-01T00:00:00Z"},
               "spec":{"nodeName":"node-d"},"status":{"phase":"Running","podIP":"10.244.2.3"}},
              {"metadata":{"name":"blockpool-node-d"},"spec":{"nodeName":"node-d"},
               "status":{"phase":"Running","podIP":"10.244.2.9"}},
              {"metadata":{"name":"blockpool-node-e"},"spec":{"nodeName":"node-e"},"status":{"phase":"Running"}},
              {"metadata":{"name":"blockpool-node-f"},"spec":{},"status":{"phase":"Running","podIP":"10.244.3.1"}}
             ]}
            """;

    @TempDir
    Path dir;

    private FakeApiServer apiServer;
    private final AtomicReference<Instant> now = new AtomicReference<>(Instant.parse("2026-01-01T00:00:00Z"));
    private Path token;

    @BeforeEach
    void servePods() throws Exception {
        token = Files.writeString(dir.resolve("token"), "token-1\n");
        apiServer = new FakeApiServer();
        apiServer.reply("GET", PODS, 200, POD_LIST);
    }

    @AfterEach
    void stop() {
        apiServer.close();
    }

    @Test
    void eachOtherNodeAtItsRunningPodsIp() throws Exception {
        assertThat(KubernetesPods.parse(
                        new ByteArrayInputStream(POD_LIST.getBytes(StandardCharsets.UTF_8)), "node-a", 9810))
                .containsExactly(
                        new PeerAddress("node-b", "10.244.1.7", 9810), new PeerAddress("node-d", "10.244.2.9", 9810));
    }

    @Test
    void listedInItsOwnNamespaceBySelectorWithTheCurrentTokenAndKeptForAWhile() throws Exception {
        KubernetesPods pods = pods();

        assertThat(pods.peers()).hasSize(2);
        now.set(now.get().plus(KubernetesPods.KEPT).minusSeconds(1));
        assertThat(pods.peers()).hasSize(2);
        assertThat(apiServer.requests())
                .containsExactly(new FakeApiServer.Request(
                        "GET",
                        PODS + "?labelSelector=app.kubernetes.io%2Fname%3Dblockpool-node",
                        "Bearer token-1",
                        ""));

        Files.writeString(token, "token-2"); // the kubelet rotated it
        now.set(now.get().plusSeconds(1));
        assertThat(pods.peers()).hasSize(2);
        assertThat(apiServer.requests())
                .extracting(FakeApiServer.Request::authorization)
                .containsExactly("Bearer token-1", "Bearer token-2");
    }

    @Test
    void aRefusalSaysWhatTheServiceAccountNeeds() {
        apiServer.reply("GET", PODS, 403, """
                {"kind":"Status","status":"Failure","message":"pods is forbidden: User \\"system:serviceaccount:\
                blockpool-system:blockpool-node\\" cannot list resource \\"pods\\"","reason":"Forbidden","code":403}
                """);

        assertThatThrownBy(() -> pods().peers())
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.UNAVAILABLE))
                .hasMessageContaining("HTTP 403")
                .hasMessageContaining("cannot list resource")
                .hasMessageContaining("needs a Role that may list pods in namespace blockpool-system");
    }

    @Test
    void anAnswerLargerThanTheBoundIsRefused() {
        String pod = "{\"spec\":{\"nodeName\":\"node-x\"},\"status\":{\"phase\":\"Pending\"}},";
        int pods = (int) (KubernetesApi.MOST_BYTES / pod.length()) + 1;
        apiServer.reply("GET", PODS, 200, "{\"items\":[" + pod.repeat(pods) + "{}]}");

        assertThatThrownBy(() -> pods().peers())
                .isInstanceOf(StorageException.class)
                .hasMessageContaining("larger than " + KubernetesApi.MOST_BYTES + " bytes");
    }

    private KubernetesPods pods() {
        return new KubernetesPods(
                apiServer.api(token, "blockpool-system"), PeerConfig.DEFAULT_POD_SELECTOR, "node-a", 9810, now::get);
    }
}
