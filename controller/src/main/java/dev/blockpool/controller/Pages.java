package dev.blockpool.controller;

import dev.blockpool.csi.CsiException;
import dev.blockpool.pool.Page;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Optional;

/**
 * Pagination for ListVolumes and ListSnapshots. The pool reads one page at a time in ID order
 * ({@link Page}); the token is opaque to the CO: it encodes the ID the page ended at, so the
 * next page stays correct when entries are added or deleted between calls (it resumes after
 * that ID, whether or not the entry still exists).
 */
final class Pages {

    private static final String PREFIX = "after:";

    private Pages() {
    }

    /** The page size asked for; 0 means all. */
    static int maxEntries(int maxEntries) {
        if (maxEntries < 0) {
            throw CsiException.invalidArgument("max_entries must not be negative, got %d", maxEntries);
        }
        return maxEntries;
    }

    /** The ID to list after; ABORTED for a token this driver did not issue. */
    static Optional<String> after(String startingToken) {
        if (startingToken.isEmpty()) {
            return Optional.empty();
        }
        try {
            String decoded = new String(Base64.getUrlDecoder().decode(startingToken), StandardCharsets.UTF_8);
            if (decoded.startsWith(PREFIX) && decoded.length() > PREFIX.length()) {
                return Optional.of(decoded.substring(PREFIX.length()));
            }
        } catch (IllegalArgumentException e) {
            // not base64: reported below
        }
        throw CsiException.aborted("starting_token %s was not issued by this driver; list again from the start",
                startingToken.length() > 40 ? startingToken.substring(0, 40) + "..." : startingToken);
    }

    /** The next_token of {@code page}: empty on the last page. */
    static String nextToken(Page<?> page) {
        return page.resumeAfter().map(id -> Base64.getUrlEncoder().withoutPadding()
                .encodeToString((PREFIX + id).getBytes(StandardCharsets.UTF_8))).orElse("");
    }
}
