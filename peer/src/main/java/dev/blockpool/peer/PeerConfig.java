package dev.blockpool.peer;

import dev.blockpool.csi.CsiException;
import dev.blockpool.csi.Quantity;
import dev.blockpool.metrics.HttpAddress;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The peer channel's settings, as the driver's command line gives them (docs/peers.md): where to
 * listen ({@code --peer-listen}, whose port every node's driver listens on), the cluster CA's
 * directory ({@code --peer-ca-dir}), the bytes per second served ({@code --peer-bandwidth}), and
 * how the other nodes are found: a fixed list ({@code --peer NODE=HOST:PORT}, repeatable) or else
 * the node plugin's pods that {@code --peer-selector} picks in the driver's own namespace. Each
 * parse method throws IllegalArgumentException with the words the driver prints after the
 * option's name.
 */
public record PeerConfig(
        HttpAddress listen, Path caDir, long bandwidthBytesPerSecond, List<PeerAddress> peers, String podSelector) {

    public static final String DEFAULT_LISTEN = "0.0.0.0:9810";
    public static final String DEFAULT_CA_DIR = "/etc/blockpool/peer-ca";
    /** The node DaemonSet's pod label, as sidecars-deploy/base/node.yaml sets it. */
    public static final String DEFAULT_POD_SELECTOR = "app.kubernetes.io/name=blockpool-node";

    public PeerConfig {
        peers = List.copyOf(peers);
        Set<String> nodes = new HashSet<>();
        for (PeerAddress peer : peers) {
            if (!nodes.add(peer.node())) {
                throw new IllegalArgumentException("node " + peer.node() + " is given twice in --peer");
            }
        }
        if (podSelector.isBlank()) {
            throw new IllegalArgumentException("the pod selector is empty: it would take every pod of the namespace");
        }
    }

    /** {@code --peer-bandwidth}: bytes per second as a Kubernetes quantity ("100Mi", "50M", "0" for no limit). */
    public static long parseBandwidth(String value) {
        try {
            return Quantity.parseBytes("the bandwidth", value);
        } catch (CsiException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
    }

    /**
     * Where this node finds the others: the {@code --peer} list when one is given, else the node
     * plugin's pods through the API server, as the pod's ServiceAccount lists them.
     */
    public PeerDirectory directory(String selfNodeId) {
        if (!peers.isEmpty()) {
            return PeerDirectory.of(peers.stream()
                    .filter(peer -> !peer.node().equals(selfNodeId))
                    .toList());
        }
        KubernetesApi api = KubernetesApi.inCluster("give the other nodes with --peer");
        return new KubernetesPods(api, podSelector, selfNodeId, listen.port(), InstantSource.system());
    }
}
