package dev.blockpool.host.loops;

import dev.blockpool.host.mounts.DeviceNumber;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/** Loop devices: the kernel's view in sysfs is the only record of which image is bound where. */
public interface LoopDevices {

    /** Every bound loop device. */
    List<LoopDevice> list();

    /** Binds {@code image} to a free loop device. */
    LoopDevice attach(Path image, boolean readOnly);

    /** Makes the device pick up a grown backing file (LOOP_SET_CAPACITY); returns the device afresh. */
    LoopDevice refreshCapacity(LoopDevice device);

    /** Unbinds the device and checks that it is gone; a device already gone is fine. */
    void detach(LoopDevice device);

    /** Devices bound to {@code image}, including ones whose image was unlinked. */
    default List<LoopDevice> boundTo(Path image) {
        return list().stream().filter(d -> isBoundTo(d, image)).toList();
    }

    /**
     * Whether the device is bound to {@code image}, a file of the pool: by the backing file's
     * device and inode, whatever mount namespace attached it.
     */
    boolean isBoundTo(LoopDevice device, Path image);

    /**
     * The device a new user of {@code image} should share: bound to it and not detaching itself;
     * a read-write one first (read-only devices next to it belong to read-only block publishes).
     */
    default Optional<LoopDevice> reusableFor(Path image) {
        return reusableAmong(boundTo(image));
    }

    /** {@link #reusableFor} among the devices bound to one image, read once. */
    static Optional<LoopDevice> reusableAmong(List<LoopDevice> boundToImage) {
        return boundToImage.stream()
                .filter(d -> !d.autoclear() && !d.backingFileDeleted())
                .min(java.util.Comparator.comparing(LoopDevice::readOnly));
    }

    /**
     * The bound device with this number, when an earlier {@link #isBoundTo} found it bound to
     * {@code image} and sysfs still shows it bound as then; answered without waiting on anything,
     * so empty whenever that is not known (the caller asks {@link #isBoundTo} where it may wait).
     */
    default Optional<LoopDevice> knownBoundDevice(DeviceNumber number, Path image) {
        return byNumber(number).filter(device -> isBoundTo(device, image));
    }

    default Optional<LoopDevice> byNumber(DeviceNumber number) {
        return list().stream().filter(d -> d.number().equals(number)).findFirst();
    }

    /** The bound device named {@code loopN}. */
    default Optional<LoopDevice> byName(String name) {
        return list().stream().filter(d -> d.name().equals(name)).findFirst();
    }
}
