package dev.blockpool.node.host;

import dev.blockpool.common.CsiException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** Reads {@code /proc/self/mountinfo} afresh on every call. */
public final class ProcMountTable implements MountTable {

    private final Path source;

    public ProcMountTable() {
        this(Path.of("/proc/self/mountinfo"));
    }

    public ProcMountTable(Path source) {
        this.source = source;
    }

    @Override
    public List<MountInfo> mounts() {
        try {
            return MountInfoParser.parse(Files.readString(source));
        } catch (IOException e) {
            throw CsiException.internal(e, "cannot read the mount table %s: %s", source, e.getMessage());
        }
    }
}
