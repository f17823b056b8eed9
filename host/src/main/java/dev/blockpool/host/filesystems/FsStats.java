package dev.blockpool.host.filesystems;

import dev.blockpool.common.Libc;

/** What statfs(2) says about a mounted filesystem, computed the way df(1) does. */
public record FsStats(
        long totalBytes, long usedBytes, long availableBytes, long totalInodes, long usedInodes, long freeInodes) {

    /** Used is total minus free; available is what unprivileged users may still take (df's "Avail"). */
    public static FsStats of(Libc.StatFs statfs) {
        long unit = statfs.fragmentSize();
        return new FsStats(
                statfs.blocks() * unit,
                (statfs.blocks() - statfs.freeBlocks()) * unit,
                statfs.availableBlocks() * unit,
                statfs.inodes(),
                statfs.inodes() - statfs.freeInodes(),
                statfs.freeInodes());
    }
}
