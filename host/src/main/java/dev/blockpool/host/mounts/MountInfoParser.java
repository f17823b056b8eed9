package dev.blockpool.host.mounts;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The one parser of {@code /proc/<pid>/mountinfo} (see proc(5)):
 * {@code id parent major:minor root mount-point options [optional fields...] - fstype source super-options}.
 * Paths and the source are octal-escaped by the kernel ({@code \040} for a space, {@code \011},
 * {@code \012}, {@code \134}).
 */
public final class MountInfoParser {

    private MountInfoParser() {}

    /** The fields a caller may select lines by (counted from 0): each line's device and mount point. */
    static final int DEVICE = 2;

    static final int MOUNT_POINT = 4;

    public static List<MountInfo> parse(String content) {
        return parse(content, -1, List.of());
    }

    /**
     * Parses the lines whose {@code field} is one of {@code values} as the kernel writes them
     * (escaped, see {@link #escape}); the other lines are only scanned up to that field, not
     * parsed. A {@code field} of -1 selects every line.
     */
    static List<MountInfo> parse(String content, int field, List<String> values) {
        List<MountInfo> mounts = new ArrayList<>();
        int start = 0;
        while (start < content.length()) {
            int end = content.indexOf('\n', start);
            if (end < 0) {
                end = content.length();
            }
            if (field < 0
                    ? !content.substring(start, end).isBlank()
                    : fieldIsOneOf(content, start, end, field, values)) {
                mounts.add(parseLine(content.substring(start, end)));
            }
            start = end + 1;
        }
        return List.copyOf(mounts);
    }

    private static boolean fieldIsOneOf(String content, int lineStart, int lineEnd, int field, List<String> values) {
        int from = lineStart;
        for (int i = 0; i < field; i++) {
            from = content.indexOf(' ', from, lineEnd);
            if (from < 0) {
                return false;
            }
            from++;
        }
        int to = content.indexOf(' ', from, lineEnd);
        int length = (to < 0 ? lineEnd : to) - from;
        for (String value : values) {
            if (length == value.length() && content.startsWith(value, from)) {
                return true;
            }
        }
        return false;
    }

    /** A path as the kernel writes it in mountinfo: space, tab, newline and backslash octal-escaped. */
    static String escape(String path) {
        StringBuilder out = new StringBuilder(path.length());
        for (int i = 0; i < path.length(); i++) {
            char c = path.charAt(i);
            switch (c) {
                case ' ', '\t', '\n', '\\' -> out.append('\\').append(String.format("%03o", (int) c));
                default -> out.append(c);
            }
        }
        return out.toString();
    }

    static MountInfo parseLine(String line) {
        String[] fields = line.strip().split(" ");
        int separator = Arrays.asList(fields).indexOf("-");
        if (fields.length < 10 || separator < 6 || fields.length < separator + 3) {
            throw new IllegalArgumentException("malformed mountinfo line: " + line);
        }
        try {
            return new MountInfo(
                    Integer.parseInt(fields[0]),
                    Integer.parseInt(fields[1]),
                    DeviceNumber.parse(fields[2]),
                    unescape(fields[3]),
                    Path.of(unescape(fields[4])),
                    List.of(fields[5].split(",")),
                    List.of(fields).subList(6, separator),
                    unescape(fields[separator + 1]),
                    unescape(fields[separator + 2]),
                    separator + 3 < fields.length ? List.of(fields[separator + 3].split(",")) : List.of());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("malformed mountinfo line: " + line, e);
        }
    }

    /** Decodes the kernel's {@code \ooo} octal escapes. */
    static String unescape(String field) {
        if (field.indexOf('\\') < 0) {
            return field;
        }
        StringBuilder out = new StringBuilder(field.length());
        for (int i = 0; i < field.length(); i++) {
            char c = field.charAt(i);
            if (c == '\\' && isOctal(field, i + 1)) {
                out.append((char) Integer.parseInt(field.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }

    private static boolean isOctal(String s, int from) {
        if (from + 3 > s.length()) {
            return false;
        }
        for (int i = from; i < from + 3; i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '7') {
                return false;
            }
        }
        return true;
    }
}
