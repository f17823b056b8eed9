package dev.blockpool.host.loops;

import dev.blockpool.host.mounts.DeviceNumber;
import java.util.Optional;

/** LOOP_GET_STATUS64 of a loop device: which file it is bound to, the same in every mount namespace. */
interface LoopStatus {

    /** The device and inode of the device's backing file; empty when the device is not bound (any more). */
    Optional<FileId> backingFileId(String name, DeviceNumber number);
}
