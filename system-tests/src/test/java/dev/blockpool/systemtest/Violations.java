package dev.blockpool.systemtest;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What the fuzz test found. The same fault tends to show thousands of times, so violations are
 * grouped into classes (kind, method, and the message with IDs and numbers blurred); the report
 * gives each class its count and its first occurrence in full.
 */
final class Violations {

    record Violation(int request, String kind, String method, String summary, String detail) {}

    private final String root;
    private final List<Violation> all = new ArrayList<>();
    private final Map<String, List<Violation>> classes = new LinkedHashMap<>();

    /** {@code root} is the test's directory, written as {@code <T>} when messages are compared. */
    Violations(Path root) {
        this.root = root.toString();
    }

    void add(int request, String kind, String method, String summary, String detail) {
        Violation violation = new Violation(request, kind, method, summary, detail);
        all.add(violation);
        String key = kind + " | " + method + " | " + blur(kind, detail);
        classes.computeIfAbsent(key, k -> new ArrayList<>()).add(violation);
        if (classes.get(key).size() == 1) {
            System.out.println("fuzz: new violation #" + request + ": " + kind + " in " + method + ": "
                    + shorten(detail, 300) + "\n      request: " + shorten(summary, 400));
        }
    }

    int count() {
        return all.size();
    }

    int classCount() {
        return classes.size();
    }

    boolean isEmpty() {
        return all.isEmpty();
    }

    /** Every class with its count, first occurrence and a few more request summaries. */
    String report() {
        StringBuilder out = new StringBuilder();
        int n = 0;
        for (List<Violation> group : classes.values()) {
            Violation first = group.getFirst();
            out.append("\n[%d] %s in %s, %d time(s); first at request #%d:%n    %s%n    request: %s%n"
                    .formatted(
                            ++n,
                            first.kind(),
                            first.method(),
                            group.size(),
                            first.request(),
                            shorten(first.detail(), 600),
                            shorten(first.summary(), 600)));
            group.stream()
                    .skip(1)
                    .limit(3)
                    .forEach(v -> out.append("    also #%d: %s%n".formatted(v.request(), shorten(v.summary(), 300))));
        }
        return out.toString();
    }

    /**
     * The message with what varies from one occurrence to the next blurred: IDs, numbers, quoted
     * values, and in a status message the paths too (which file a refused request named is in
     * its summary; which file a request changed is the finding itself, so that stays).
     */
    private String blur(String kind, String detail) {
        String blurred = detail.replace(root, "<T>");
        if (kind.equals("UNKNOWN") || kind.equals("INTERNAL") || kind.equals("no answer")) {
            blurred = blurred.replaceAll("<T>/\\S*", "<path>");
        }
        blurred = blurred.replaceAll("(vol|snap)-[0-9a-f]{32}", "$1-ID")
                .replaceAll("\"[^\"]*\"", "\"…\"")
                .replaceAll("/dev/loop\\d+", "/dev/loopN")
                .replaceAll("\\d+", "N");
        return blurred.length() > 160 ? blurred.substring(0, 160) : blurred;
    }

    static String shorten(String text, int max) {
        String visible = text.replace("\n", "\\n").replace("\0", "\\0");
        return visible.length() <= max ? visible : visible.substring(0, max) + "… (" + visible.length() + " chars)";
    }
}
