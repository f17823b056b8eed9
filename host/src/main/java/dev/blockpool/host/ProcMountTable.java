package dev.blockpool.host;

import dev.blockpool.common.StorageException;
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
        String content;
        try {
            content = Files.readString(source);
        } catch (IOException e) {
            throw StorageException.io(e, "cannot read the mount table %s", source);
        }
        try {
            return MountInfoParser.parse(content);
        } catch (IllegalArgumentException e) {
            throw StorageException.internal(e, "cannot parse the mount table %s: %s", source, e.getMessage());
        }
    }
}
