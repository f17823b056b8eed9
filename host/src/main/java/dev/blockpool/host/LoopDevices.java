package dev.blockpool.host;

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
        Path wanted = LoopSysfs.canonical(image);
        return list().stream().filter(d -> d.backingFile().equals(wanted)).toList();
    }

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

    default Optional<LoopDevice> byNumber(DeviceNumber number) {
        return list().stream().filter(d -> d.number().equals(number)).findFirst();
    }

    /** Only the backing file of the bound device with this number: what tells whose a mount is. */
    default Optional<Path> backingFileOf(DeviceNumber number) {
        return byNumber(number).map(LoopDevice::backingFile);
    }

    /** The bound device named {@code loopN}. */
    default Optional<LoopDevice> byName(String name) {
        return list().stream().filter(d -> d.name().equals(name)).findFirst();
    }
}
