package dev.blockpool.host;

/** What statfs(2) says about a mounted filesystem, computed the way df(1) does. */
public record FsStats(long totalBytes, long usedBytes, long availableBytes,
                      long totalInodes, long usedInodes, long freeInodes) {

    /**
     * Parses {@code stat -f -c '%S %b %f %a %c %d'}: fragment size, total blocks, free blocks,
     * blocks available to unprivileged users, total inodes, free inodes.
     */
    public static FsStats parseStatFs(String output) {
        String[] f = output.strip().split("\\s+");
        if (f.length != 6) {
            throw new IllegalArgumentException("unexpected `stat -f` output: " + output.strip());
        }
        long blockSize = Long.parseLong(f[0]);
        long blocks = Long.parseLong(f[1]);
        long free = Long.parseLong(f[2]);
        long available = Long.parseLong(f[3]);
        long inodes = Long.parseLong(f[4]);
        long freeInodes = Long.parseLong(f[5]);
        return new FsStats(blocks * blockSize, (blocks - free) * blockSize, available * blockSize,
                inodes, inodes - freeInodes, freeInodes);
    }
}
