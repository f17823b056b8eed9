package dev.blockpool.peer;

import dev.blockpool.csi.CsiException;
import dev.blockpool.csi.Quantity;
import dev.blockpool.metrics.HttpAddress;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The peer channel's settings, as the driver's command line gives them (docs/peers.md): where to
 * listen ({@code --peer-listen}), the cluster CA's directory ({@code --peer-ca-dir}), the bytes per
 * second served ({@code --peer-bandwidth}), and how the other nodes are found: a fixed list
 * ({@code --peer NODE=HOST:PORT}, repeatable) or else the cluster's Node objects, each at its
 * InternalIP and {@code --peer-port}. Each parse method throws IllegalArgumentException with the
 * words the driver prints after the option's name.
 */
public record PeerConfig(
        HttpAddress listen, Path caDir, long bandwidthBytesPerSecond, List<PeerAddress> peers, int peerPort) {

    public static final String DEFAULT_LISTEN = "0.0.0.0:9810";
    public static final int DEFAULT_PORT = 9810;
    public static final String DEFAULT_CA_DIR = "/etc/blockpool/peer-ca";

    public PeerConfig {
        peers = List.copyOf(peers);
        Set<String> nodes = new HashSet<>();
        for (PeerAddress peer : peers) {
            if (!nodes.add(peer.node())) {
                throw new IllegalArgumentException("node " + peer.node() + " is given twice in --peer");
            }
        }
        if (peerPort < 1 || peerPort > 65535) {
            throw new IllegalArgumentException("the peer port is not between 1 and 65535");
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

    /** {@code --peer-port}. */
    public static int parsePort(String value) {
        try {
            return Integer.parseInt(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("the port is not a number");
        }
    }

    /**
     * Where this node finds the others: the {@code --peer} list when one is given, else the
     * cluster's nodes through the API server, as a pod's ServiceAccount reads them.
     */
    public PeerDirectory directory(String selfNodeId) {
        if (!peers.isEmpty()) {
            return PeerDirectory.of(peers.stream()
                    .filter(peer -> !peer.node().equals(selfNodeId))
                    .toList());
        }
        return KubernetesNodes.inCluster(selfNodeId, peerPort);
    }
}
