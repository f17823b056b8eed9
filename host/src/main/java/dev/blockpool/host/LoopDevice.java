package dev.blockpool.host;

import java.nio.file.Path;

/**
 * A bound loop device as the kernel reports it under {@code /sys/block/loopN}.
 *
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
        boolean backingFileDeleted,
        boolean readOnly,
        boolean autoclear,
        long sizeBytes) {}
