package dev.blockpool.pool;

import dev.blockpool.common.StorageException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.regex.Pattern;

/**
 * Volume, snapshot and node IDs. The driver derives volume and snapshot IDs from the request
 * name, so they are path-safe by construction and the same name always maps to the same ID,
 * durably (no name index to keep in sync). Every ID that arrives in a request is checked here
 * before it is used to build a path.
 */
public final class Ids {

    public static final String VOLUME_PREFIX = "vol-";
    public static final String SNAPSHOT_PREFIX = "snap-";
    public static final int MAX_ID_BYTES = 128;

    private static final Pattern VOLUME_ID = Pattern.compile("vol-[0-9a-f]{32}");
    private static final Pattern SNAPSHOT_ID = Pattern.compile("snap-[0-9a-f]{32}");
    /** Node IDs are host names in practice: DNS-label characters, dots and underscores. */
    private static final Pattern NODE_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");

    private Ids() {
    }

    public static String volumeIdFor(String name) {
        return VOLUME_PREFIX + digest(name);
    }

    public static String snapshotIdFor(String name) {
        return SNAPSHOT_PREFIX + digest(name);
    }

    /** True when {@code id} is one this driver could have issued; nothing else reaches a path. */
    public static boolean isVolumeId(String id) {
        return VOLUME_ID.matcher(id).matches();
    }

    public static boolean isSnapshotId(String id) {
        return SNAPSHOT_ID.matcher(id).matches();
    }

    public static boolean isNodeId(String id) {
        return NODE_ID.matcher(id).matches();
    }

    /** Rejects an empty or over-long ID; returns it otherwise. */
    public static String requireId(String kind, String id) {
        if (id.isEmpty()) {
            throw StorageException.invalid("%s is required", kind);
        }
        if (id.getBytes(StandardCharsets.UTF_8).length > MAX_ID_BYTES) {
            throw StorageException.invalid("%s is longer than %d bytes", kind, MAX_ID_BYTES);
        }
        return id;
    }

    public static String requireNodeId(String nodeId) {
        requireId("node_id", nodeId);
        if (!isNodeId(nodeId)) {
            throw StorageException.invalid("node_id %s has characters other than letters, digits, '.', '_' and '-'",
                    quote(nodeId));
        }
        return nodeId;
    }

    /** A request value quoted for an error message, with control characters made visible. */
    public static String quote(String value) {
        StringBuilder out = new StringBuilder("\"");
        value.codePoints().limit(80).forEach(c -> {
            if (c < 0x20 || c == 0x7f) {
                out.append("\\x%02x".formatted(c));
            } else {
                out.appendCodePoint(c);
            }
        });
        return out.append(value.length() > 80 ? "...\"" : "\"").toString();
    }

    private static String digest(String name) {
        try {
            byte[] hash = MessageDigest.getInstance("SHA-256").digest(name.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(hash, 0, 16);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every Java runtime", e);
        }
    }
}
