package dev.blockpool.host;

import java.nio.file.Path;

/** The kernel's freeze of a mounted file system, through the directory it is mounted at. */
interface FreezeCalls {

    /**
     * FIFREEZE: the file system's dirty data and journal are written to its device and every
     * further write to it waits until it is thawed. A file system frozen already is refused.
     */
    void freeze(Path mountPoint);

    /** FITHAW: writes go on. False when it was not frozen. */
    boolean thaw(Path mountPoint);
}
