package dev.blockpool.host;

import java.nio.file.Path;

/**
 * A bound loop device as the kernel reports it under {@code /sys/block/loopN} and to LOOP_GET_STATUS64.
 *
 * @param backingFile        the backing file's path as the kernel prints it to this process: relative to the
 *                           mount it was opened through, so for messages only (a device made in another
 *                           mount namespace shows another path); whose image it is, {@code backingFileId} tells
 * @param backingFileId      the backing file's device and inode (LOOP_GET_STATUS64)
 * @param backingFileDeleted the image was unlinked while bound (sysfs appends " (deleted)")
 * @param autoclear          the device detaches itself on last close: set by a detach (LOOP_CLR_FD)
 *                           on a device that is still open, so a device with this flag is on its
 *                           way out and is never reused
 */
public record LoopDevice(
        String name,
        Path device,
        DeviceNumber number,
        Path backingFile,
        FileId backingFileId,
        boolean backingFileDeleted,
        boolean readOnly,
        boolean autoclear,
        long sizeBytes) {}
