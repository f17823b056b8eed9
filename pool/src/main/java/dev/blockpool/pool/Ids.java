package dev.blockpool.pool;

import dev.blockpool.common.Quoting;
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
    public static final String GROUP_SNAPSHOT_PREFIX = "group-";

    /** Hex digits of the digest in an ID: 128 bits. */
    private static final int DIGEST_CHARS = 32;
    /** Node IDs are host names in practice: DNS-label characters, dots and underscores. */
    private static final Pattern NODE_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");

    private Ids() {}

    public static String volumeIdFor(String name) {
        return VOLUME_PREFIX + digest(name);
    }

    public static String snapshotIdFor(String name) {
        return SNAPSHOT_PREFIX + digest(name);
    }

    public static String groupSnapshotIdFor(String name) {
        return GROUP_SNAPSHOT_PREFIX + digest(name);
    }

    public static boolean isGroupSnapshotId(String id) {
        return isDigestId(GROUP_SNAPSHOT_PREFIX, id);
    }

    /** True when {@code id} is one this driver could have issued; nothing else reaches a path. */
    public static boolean isVolumeId(String id) {
        return isDigestId(VOLUME_PREFIX, id);
    }

    public static boolean isSnapshotId(String id) {
        return isDigestId(SNAPSHOT_PREFIX, id);
    }

    /** {@code prefix} and 32 lowercase hex digits; by hand, not a regex: a listing checks every name. */
    private static boolean isDigestId(String prefix, String id) {
        if (id.length() != prefix.length() + DIGEST_CHARS || !id.startsWith(prefix)) {
            return false;
        }
        for (int i = prefix.length(); i < id.length(); i++) {
            char c = id.charAt(i);
            if (!(c >= '0' && c <= '9' || c >= 'a' && c <= 'f')) {
                return false;
            }
        }
        return true;
    }

    public static boolean isNodeId(String id) {
        return NODE_ID.matcher(id).matches();
    }

    /** INVALID unless the node ID is a host-name-like ID of at most 128 characters. */
    public static String requireNodeId(String nodeId) {
        if (!isNodeId(nodeId)) {
            throw StorageException.invalid(
                    "node_id %s must be 1-128 letters, digits, '.', '_' or '-', starting with " + "a letter or digit",
                    Quoting.quote(nodeId));
        }
        return nodeId;
    }

    private static String digest(String name) {
        try {
            byte[] hash = MessageDigest.getInstance("SHA-256").digest(name.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(hash, 0, DIGEST_CHARS / 2);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every Java runtime", e);
        }
    }
}
