package dev.blockpool.host.filesystems;

import java.nio.file.Path;

/**
 * The kernel's freeze of a mounted file system, through the directory it is mounted at. Each
 * call may wait as long as the kernel does (a freeze waits for the writers in flight);
 * {@link FilesystemFreezes} gives them their deadlines.
 */
public interface FreezeCalls {

    /**
     * FIFREEZE: the file system's dirty data and journal are written to its device and every
     * further write to it waits until it is thawed. A file system frozen already is refused.
     */
    void freeze(Path mountPoint);

    /** FITHAW: writes go on. False when the kernel answers that it was not frozen (EINVAL). */
    boolean thaw(Path mountPoint);
}
