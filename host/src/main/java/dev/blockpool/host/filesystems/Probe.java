package dev.blockpool.host.filesystems;

import java.util.Map;
import java.util.Optional;

/**
 * What {@code blkid -p} found on a device. {@link #empty()} is only true when the probe ran and
 * found neither a filesystem (or any other signature) nor a partition table: the one state in
 * which formatting is allowed. A probe that failed throws instead.
 */
public record Probe(Optional<String> type, Optional<String> usage, Optional<String> partitionTable) {

    public static final Probe EMPTY = new Probe(Optional.empty(), Optional.empty(), Optional.empty());

    public boolean empty() {
        return type.isEmpty() && partitionTable.isEmpty();
    }

    /** Parses {@code blkid -p -o export} output ({@code KEY=value} lines). */
    public static Probe parseExport(String output) {
        Map<String, String> tags = new java.util.HashMap<>();
        for (String line : output.split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                tags.put(line.substring(0, eq).strip(), line.substring(eq + 1).strip());
            }
        }
        return new Probe(
                Optional.ofNullable(tags.get("TYPE")),
                Optional.ofNullable(tags.get("USAGE")),
                Optional.ofNullable(tags.get("PTTYPE")));
    }

    public String describe() {
        if (partitionTable.isPresent()) {
            return "a " + partitionTable.get() + " partition table";
        }
        return type.map(t ->
                        "a " + t + " signature" + usage.map(u -> " (" + u + ")").orElse(""))
                .orElse("nothing");
    }
}
