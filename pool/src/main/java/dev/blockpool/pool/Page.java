package dev.blockpool.pool;

import java.util.List;
import java.util.Optional;

/**
 * One page of a listing in ID order, read from the pool when asked for. {@code resumeAfter} is
 * the ID after which the next page starts, present while the listing has IDs left; it stays a
 * valid place to resume from whatever is created or deleted in between, since IDs sort the same
 * way whichever exist.
 */
public record Page<T>(List<T> entries, Optional<String> resumeAfter) {
}
