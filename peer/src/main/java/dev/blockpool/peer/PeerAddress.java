package dev.blockpool.peer;

import dev.blockpool.metrics.HttpAddress;

/** Where another node's peer server listens. */
public record PeerAddress(String node, String host, int port) {

    /** {@code NODE=HOST:PORT}, as {@code --peer} takes it. */
    public static PeerAddress parse(String value) {
        int equals = value.indexOf('=');
        if (equals <= 0) {
            throw new IllegalArgumentException("expected NODE=HOST:PORT, e.g. node-b=10.0.0.12:9810");
        }
        HttpAddress address = HttpAddress.parse(value.substring(equals + 1));
        if (address.host().isEmpty() || address.port() == 0) {
            throw new IllegalArgumentException("expected NODE=HOST:PORT with a host and a port other than 0");
        }
        return new PeerAddress(value.substring(0, equals), address.host(), address.port());
    }

    @Override
    public String toString() {
        return node + " at " + new HttpAddress(host, port);
    }
}
