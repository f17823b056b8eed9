package dev.blockpool.host.loops;

import java.nio.file.Path;

/**
 * The kernel's loop-device calls, as {@link HostLoopDevices} makes them: what it decides is done
 * here. An interface, so its decisions can be unit-tested on a made-up sysfs without a device.
 */
interface LoopCalls {

    /**
     * Binds {@code image} to a free loop device with 512-byte sectors, read-only if asked, with
     * direct I/O where the kernel takes it; returns the device's name ({@code loopN}).
     */
    String attach(Path image, boolean readOnly);

    /** LOOP_CLR_FD on the device, if it is still bound to its image; returns 0 or errno. */
    int detach(LoopDevice device);

    /** LOOP_SET_CAPACITY: the device takes the size of its grown image. */
    void setCapacity(LoopDevice device);
}
