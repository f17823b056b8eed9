package dev.blockpool.controller;

import dev.blockpool.csi.CsiException;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;

/**
 * Pagination for ListVolumes and ListSnapshots. The token is opaque to the CO: it encodes the
 * ID of the last entry returned, so a page stays correct when entries are added or deleted
 * between calls (it resumes after that ID, whether or not the entry still exists).
 */
final class Pages {

    record Page<T>(List<T> entries, String nextToken) {
    }

    private static final String PREFIX = "after:";

    private Pages() {
    }

    /** {@code sorted} must be sorted by {@code id}; {@code maxEntries} 0 means all. */
    static <T> Page<T> page(List<T> sorted, Function<T, String> id, int maxEntries, String startingToken) {
        if (maxEntries < 0) {
            throw CsiException.invalidArgument("max_entries must not be negative, got %d", maxEntries);
        }
        int from = 0;
        Optional<String> after = decode(startingToken);
        if (after.isPresent()) {
            while (from < sorted.size() && id.apply(sorted.get(from)).compareTo(after.get()) <= 0) {
                from++;
            }
        }
        int to = maxEntries == 0 ? sorted.size() : Math.min(sorted.size(), from + maxEntries);
        List<T> entries = sorted.subList(from, to);
        String next = to < sorted.size() ? encode(id.apply(sorted.get(to - 1))) : "";
        return new Page<>(List.copyOf(entries), next);
    }

    private static String encode(String lastId) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString((PREFIX + lastId).getBytes(StandardCharsets.UTF_8));
    }

    private static Optional<String> decode(String token) {
        if (token.isEmpty()) {
            return Optional.empty();
        }
        try {
            String decoded = new String(Base64.getUrlDecoder().decode(token), StandardCharsets.UTF_8);
            if (decoded.startsWith(PREFIX) && decoded.length() > PREFIX.length()) {
                return Optional.of(decoded.substring(PREFIX.length()));
            }
        } catch (IllegalArgumentException e) {
            // not base64: reported below
        }
        throw CsiException.aborted("starting_token %s was not issued by this driver; list again from the start",
                token.length() > 40 ? token.substring(0, 40) + "..." : token);
    }
}
