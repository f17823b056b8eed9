package dev.blockpool.pool.records;

import java.util.List;
import java.util.OptionalLong;

/**
 * One page of a listing, read from the pool when asked for, in the order of the pool's
 * directory. {@code resumeAt} is the directory position where the next page starts, present
 * while the listing has entries left; the filesystem keeps it valid whatever is created or
 * deleted in between, so every entry that exists throughout a listing is in exactly one page.
 */
public record Page<T>(List<T> entries, OptionalLong resumeAt) {}
