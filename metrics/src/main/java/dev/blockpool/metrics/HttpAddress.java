package dev.blockpool.metrics;

/**
 * Where the metrics are served: {@code host:port} as the kubernetes-csi sidecars take their
 * {@code --http-endpoint}; an empty host ({@code :8080}) listens on every address, an IPv6 host
 * is written in brackets ({@code [::1]:8080}).
 */
public record HttpAddress(String host, int port) {

    public static HttpAddress parse(String value) {
        int colon = value.lastIndexOf(':');
        if (colon < 0) {
            throw new IllegalArgumentException("expected host:port, e.g. :8080 or 0.0.0.0:8080");
        }
        String host = value.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        } else if (host.contains(":")) {
            throw new IllegalArgumentException("an IPv6 address is written in brackets, e.g. [::]:8080");
        }
        int port;
        try {
            port = Integer.parseInt(value.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("the port is not a number");
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("the port is not between 0 and 65535");
        }
        return new HttpAddress(host, port);
    }

    @Override
    public String toString() {
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
    }
}
