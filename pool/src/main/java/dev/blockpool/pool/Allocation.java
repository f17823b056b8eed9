package dev.blockpool.pool;

import dev.blockpool.common.Quoting;
import dev.blockpool.common.StorageException;
import java.util.Locale;

/** How a new image's blocks are provided: on first write (sparse) or up front (fallocate). */
public enum Allocation {
    SPARSE,
    PREALLOCATED;

    public static Allocation parse(String value) {
        return switch (value.toLowerCase(Locale.ROOT)) {
            case "sparse" -> SPARSE;
            case "preallocated" -> PREALLOCATED;
            default ->
                throw StorageException.invalid(
                        "allocation %s is not supported: use \"sparse\" or \"preallocated\"", Quoting.quote(value));
        };
    }
}
