package dev.blockpool.controller;

import dev.blockpool.csi.CsiException;
import dev.blockpool.pool.records.Page;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * Pagination for ListVolumes and ListSnapshots. The pool reads one page at a time from where
 * the last one stopped in its directory ({@link Page}); the token is opaque to the CO: it
 * encodes that directory position, which stays valid when entries are added or deleted
 * between calls.
 */
final class Pages {

    private static final String PREFIX = "at:";

    private Pages() {}

    /** The page size asked for; 0 means all. */
    static int maxEntries(int maxEntries) {
        if (maxEntries < 0) {
            throw CsiException.invalidArgument("max_entries must not be negative, got %d", maxEntries);
        }
        return maxEntries;
    }

    /** The pool position to list from (0: the start); ABORTED for a token this driver did not issue. */
    static long from(String startingToken) {
        if (startingToken.isEmpty()) {
            return 0;
        }
        try {
            String decoded = new String(Base64.getUrlDecoder().decode(startingToken), StandardCharsets.UTF_8);
            if (decoded.startsWith(PREFIX)) {
                long position = Long.parseLong(decoded.substring(PREFIX.length()));
                if (position > 0) {
                    return position;
                }
            }
        } catch (IllegalArgumentException e) { // NumberFormatException included
            // not base64, or not a position: reported below
        }
        throw CsiException.aborted(
                "starting_token %s was not issued by this driver; list again from the start",
                startingToken.length() > 40 ? startingToken.substring(0, 40) + "..." : startingToken);
    }

    /** The next_token of {@code page}: empty on the last page. */
    static String nextToken(Page<?> page) {
        return page.resumeAt().isEmpty()
                ? ""
                : Base64.getUrlEncoder()
                        .withoutPadding()
                        .encodeToString((PREFIX + page.resumeAt().getAsLong()).getBytes(StandardCharsets.UTF_8));
    }
}
