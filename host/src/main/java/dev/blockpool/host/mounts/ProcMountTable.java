package dev.blockpool.host.mounts;

import dev.blockpool.common.StorageException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * Reads {@code /proc/self/mountinfo} afresh on every call. A question about one mount point or
 * device parses only the lines that answer it: a node with many pods has thousands of mounts.
 */
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
        return read(-1, List.of());
    }

    @Override
    public List<MountInfo> allAt(Path... mountPoints) {
        return read(
                MountInfoParser.MOUNT_POINT,
                Stream.of(mountPoints)
                        .map(p -> MountInfoParser.escape(
                                p.toAbsolutePath().normalize().toString()))
                        .toList());
    }

    @Override
    public List<MountInfo> ofDevice(DeviceNumber device) {
        return read(MountInfoParser.DEVICE, List.of(device.toString()));
    }

    private List<MountInfo> read(int field, List<String> values) {
        String content;
        try {
            content = Files.readString(source);
        } catch (IOException e) {
            throw StorageException.io(e, "cannot read the mount table %s", source);
        }
        try {
            return MountInfoParser.parse(content, field, values);
        } catch (IllegalArgumentException e) {
            throw StorageException.internal(e, "cannot parse the mount table %s: %s", source, e.getMessage());
        }
    }
}
