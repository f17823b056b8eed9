package dev.blockpool.peer;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The other nodes read from the API server's NodeList. */
class KubernetesNodesTest {

    @Test
    void eachOtherNodeAtItsInternalIp() throws Exception {
        String nodeList = """
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

        assertThat(KubernetesNodes.parse(
                        new ByteArrayInputStream(nodeList.getBytes(StandardCharsets.UTF_8)), "node-a", 9810))
                .containsExactly(new PeerAddress("node-b", "10.0.0.2", 9810));
    }
}
