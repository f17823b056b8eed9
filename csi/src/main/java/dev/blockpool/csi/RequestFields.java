package dev.blockpool.csi;

import dev.blockpool.common.Quoting;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * The checks every request field gets before anything else sees it, one rule each: IDs and
 * names are 1-128 bytes (the CSI spec's limit for an ID), paths are absolute, and neither
 * carries a NUL. Whether an ID is one the pool could have issued is the pool's question.
 */
public final class RequestFields {

    /** The CSI spec's size limit for an ID or name. */
    public static final int MAX_ID_BYTES = 128;
    /** Linux's PATH_MAX. */
    public static final int MAX_PATH_BYTES = 4096;
    /** Linux's NAME_MAX: the longest name of one file. */
    public static final int MAX_NAME_BYTES = 255;

    private RequestFields() {}

    /** A volume, snapshot or node ID, or a name: required, at most 128 bytes, no NUL. */
    public static String id(String field, String value) {
        return bounded(field, value, MAX_ID_BYTES);
    }

    /**
     * An absolute path given by the CO (a staging or target path): normalized, as kubelet writes
     * them, so "." and ".." can never walk it somewhere else; no control characters; no name
     * longer than a filesystem allows.
     */
    public static Path absolutePath(String field, String value) {
        Path path = Path.of(bounded(field, value, MAX_PATH_BYTES));
        if (!path.isAbsolute() || path.getNameCount() == 0) {
            throw CsiException.invalidArgument(
                    "%s must be an absolute path below /, got %s", field, Quoting.quote(value));
        }
        if (!path.equals(path.normalize())) {
            throw CsiException.invalidArgument(
                    "%s %s has \".\" or \"..\" in it; give the path itself", field, Quoting.quote(value));
        }
        if (value.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
            throw CsiException.invalidArgument("%s %s has control characters in it", field, Quoting.quote(value));
        }
        for (Path name : path) {
            if (name.toString().getBytes(StandardCharsets.UTF_8).length > MAX_NAME_BYTES) {
                throw CsiException.invalidArgument("%s has a name longer than %d bytes", field, MAX_NAME_BYTES);
            }
        }
        return path;
    }

    /** A required field with a length limit; NUL can reach no path or command line. */
    public static String bounded(String field, String value, int maxBytes) {
        if (value.isEmpty()) {
            throw CsiException.invalidArgument("%s is required", field);
        }
        if (value.indexOf('\0') >= 0) {
            throw CsiException.invalidArgument("%s contains a NUL byte", field);
        }
        if (value.getBytes(StandardCharsets.UTF_8).length > maxBytes) {
            throw CsiException.invalidArgument("%s is longer than %d bytes", field, maxBytes);
        }
        return value;
    }
}
