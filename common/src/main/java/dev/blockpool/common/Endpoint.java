package dev.blockpool.common;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * The CSI endpoint: a Unix domain socket, given as {@code unix:///abs/path}, {@code unix:/abs/path}
 * or a plain path. Any other scheme is refused: kubelet and the sidecars speak to CSI drivers
 * over Unix sockets only.
 */
public record Endpoint(Path socketPath) {

    /** sun_path holds 108 bytes including the terminating NUL. */
    public static final int MAX_SOCKET_PATH_BYTES = 107;

    public static Endpoint parse(String value) {
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException("no endpoint given: pass --endpoint or set CSI_ENDPOINT");
        }
        String path = value;
        if (value.startsWith("unix:")) {
            path = value.substring("unix:".length());
            if (path.startsWith("//")) {
                path = path.substring(2);
            }
        } else if (value.matches("^[A-Za-z][A-Za-z0-9+.-]*:.*")) {
            throw new IllegalArgumentException(
                    "endpoint " + value + " is not a Unix socket: use unix:///path/to/csi.sock or a plain path");
        }
        if (path.isEmpty() || path.endsWith("/")) {
            throw new IllegalArgumentException("endpoint " + value + " names no socket file");
        }
        if (path.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("endpoint contains a NUL byte");
        }
        Path socket = Path.of(path).toAbsolutePath().normalize();
        int length = socket.toString().getBytes(StandardCharsets.UTF_8).length;
        if (length > MAX_SOCKET_PATH_BYTES) {
            throw new IllegalArgumentException("socket path " + socket + " is " + length
                    + " bytes; Unix sockets allow at most " + MAX_SOCKET_PATH_BYTES);
        }
        return new Endpoint(socket);
    }

    @Override
    public String toString() {
        return "unix://" + socketPath;
    }
}
