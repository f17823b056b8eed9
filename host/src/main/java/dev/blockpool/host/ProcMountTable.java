package dev.blockpool.host;

import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalInt;
import java.util.stream.Stream;

/**
 * Reads {@code /proc/self/mountinfo} afresh on every call. A question about one mount point or
 * device parses only the lines that answer it: a node with many pods has thousands of mounts.
 */
public final class ProcMountTable implements MountTable {

    private final Path source;
    /** This process's own table: a path of this host can then tell by itself that it is no mount point. */
    private final boolean live;
    /** How large the table was last time, so that a read of it usually takes one buffer. */
    private volatile int lastSize = 16 * 1024;

    public ProcMountTable() {
        this(Path.of("/proc/self/mountinfo"), true);
    }

    /** The table in {@code source}, a copy of some host's: its paths are not looked at on this one. */
    public ProcMountTable(Path source) {
        this(source, false);
    }

    private ProcMountTable(Path source, boolean live) {
        this.source = source;
        this.live = live;
    }

    @Override
    public List<MountInfo> mounts() {
        return read(-1, List.of());
    }

    @Override
    public List<MountInfo> allAt(Path... mountPoints) {
        if (live && Stream.of(mountPoints).allMatch(ProcMountTable::surelyNoMountPoint)) {
            return List.of();
        }
        return read(MountInfoParser.MOUNT_POINT, Stream.of(mountPoints)
                .map(p -> MountInfoParser.escape(p.toAbsolutePath().normalize().toString())).toList());
    }

    @Override
    public List<MountInfo> ofDevice(DeviceNumber device) {
        return read(MountInfoParser.DEVICE, List.of(device.toString()));
    }

    private List<MountInfo> read(int field, List<String> values) {
        String content;
        try {
            content = KernelFiles.read(source, lastSize + 4096);
            lastSize = content.length();
        } catch (IOException e) {
            throw StorageException.io(e, "cannot read the mount table %s", source);
        }
        try {
            return MountInfoParser.parse(content, field, values);
        } catch (IllegalArgumentException e) {
            throw StorageException.internal(e, "cannot parse the mount table %s: %s", source, e.getMessage());
        }
    }

    /**
     * Whether the path says by itself that nothing is mounted there, as the kernel has it in
     * memory: looked up from its caches alone and no root of a mount by statx, which does not ask
     * its filesystem, so a path on one that does not answer never waits here. Then the table need
     * not be read, which costs the kernel a line per mount of the node (a publish's target, not
     * made yet or made fresh). Anything short of that (not cached, a symlink on the way, a broken
     * mount, which the table lists) is for the table to tell.
     */
    private static boolean surelyNoMountPoint(Path path) {
        OptionalInt opened;
        try {
            opened = Libc.openPathCached(path.toAbsolutePath().normalize().toString());
        } catch (Libc.ErrnoException e) {
            return e.errno() == Libc.ENOENT; // not there, as the caches know: nothing can be mounted on it
        }
        if (opened.isEmpty()) {
            return false;
        }
        try {
            return !Libc.statCached(opened.getAsInt()).mountRoot().orElse(true);
        } catch (Libc.ErrnoException e) {
            return false;
        } finally {
            Libc.close(opened.getAsInt());
        }
    }
}
