package dev.blockpool.host.loops;

import dev.blockpool.host.mounts.DeviceNumber;
import java.nio.file.Path;
import java.util.Set;

/**
 * A bound loop device as the kernel reports it under {@code /sys/block/loopN} and to LOOP_GET_STATUS64.
 *
 * @param backingFile   the backing file's path as the kernel prints it to this process: relative to the
 *                      mount it was opened through, so for messages only (a device made in another mount
 *                      namespace shows another path); whose image it is, {@code backingFileId} tells
 * @param backingFileId the backing file's device and inode (LOOP_GET_STATUS64)
 * @param flags         what sysfs says of the device besides its numbers
 */
public record LoopDevice(
        String name,
        Path device,
        DeviceNumber number,
        Path backingFile,
        FileId backingFileId,
        Set<Flag> flags,
        long sizeBytes) {

    /** What sysfs says of a bound device besides its numbers. */
    public enum Flag {
        /** The image was unlinked while bound (sysfs appends " (deleted)" to the backing file). */
        BACKING_FILE_DELETED,
        /** The device refuses writes ({@code ro}). */
        READ_ONLY,
        /**
         * The device detaches itself on last close ({@code loop/autoclear}): set by a detach
         * (LOOP_CLR_FD) on a device that is still open, so a device with this flag is on its way
         * out and is never reused.
         */
        AUTOCLEAR
    }

    public LoopDevice {
        flags = Set.copyOf(flags);
    }

    public boolean backingFileDeleted() {
        return flags.contains(Flag.BACKING_FILE_DELETED);
    }

    public boolean readOnly() {
        return flags.contains(Flag.READ_ONLY);
    }

    public boolean autoclear() {
        return flags.contains(Flag.AUTOCLEAR);
    }
}
