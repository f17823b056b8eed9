package dev.blockpool.host.loops;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import dev.blockpool.host.mounts.DeviceNumber;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Loop devices through the loop driver's ioctls ({@link LoopCalls}), read back from sysfs. */
public final class HostLoopDevices implements LoopDevices {

    private static final Logger log = LoggerFactory.getLogger(HostLoopDevices.class);
    /** How long a detached device may take to disappear (udev or blkid may hold it briefly). */
    private static final Duration DETACH_GRACE = Duration.ofSeconds(5);

    private final LoopCalls calls;
    private final LoopSysfs sysfs;
    private final ImageIdentities images;
    /** Who holds a device that will not detach, for the error: from this host's /proc. */
    private final DeviceHolders holders;

    private final Duration detachGrace;
    /** Where buffered I/O was said to be used: said once per pool directory, not at every attach. */
    private final Set<Path> bufferedSaid = ConcurrentHashMap.newKeySet();

    public HostLoopDevices(BlockingCalls blocking) {
        this(LoopSysfs.onThisHost(blocking), blocking);
    }

    private HostLoopDevices(LoopSysfs sysfs, BlockingCalls blocking) {
        this(
                new LinuxLoopCalls(blocking, sysfs, Path.of("/dev")),
                sysfs,
                new ImageIdentities(blocking),
                Path.of("/proc"),
                DETACH_GRACE);
    }

    /**
     * Binds this room's own system calls ahead of the first attach, which would otherwise wait for it
     * (docs/performance-node.md).
     */
    public static void prepareCalls() {
        LinuxLoopCalls.prepare();
    }

    /** Over {@code sysfs} and the processes in {@code proc}, as a test makes them up. */
    HostLoopDevices(LoopCalls calls, LoopSysfs sysfs, ImageIdentities images, Path proc, Duration detachGrace) {
        this.calls = calls;
        this.sysfs = sysfs;
        this.images = images;
        this.holders = new DeviceHolders(proc);
        this.detachGrace = detachGrace;
    }

    @Override
    public List<LoopDevice> list() {
        return sysfs.list();
    }

    @Override
    public List<LoopDevice> boundTo(Path image) {
        return sysfs.backedByFileNamed(image.getFileName()).stream()
                .filter(device -> images.isBoundTo(device, image))
                .toList();
    }

    @Override
    public boolean isBoundTo(LoopDevice device, Path image) {
        return images.isBoundTo(device, image);
    }

    @Override
    public Optional<LoopDevice> byNumber(DeviceNumber number) {
        return sysfs.byNumber(number);
    }

    @Override
    public Optional<LoopDevice> knownBoundDevice(DeviceNumber number, Path image) {
        return images.knownBinding(image, number)
                .flatMap(known -> sysfs.byNumber(
                                number, (name, n) -> Optional.of(known.device().backingFileId()))
                        .filter(known::isStill));
    }

    @Override
    public Optional<LoopDevice> byName(String name) {
        return sysfs.read(name);
    }

    @Override
    public LoopDevice attach(Path image, boolean readOnly) {
        String name = calls.attach(image, readOnly);
        LoopDevice device = sysfs.read(name)
                .orElseThrow(() -> StorageException.internal(
                        "the kernel bound %s to /dev/%s, but sysfs shows no image bound to it", image, name));
        images.attached(device, image);
        log.info("attached {} to {}{}", image, device.device(), readOnly ? " read-only" : "");
        Path pool = image.toAbsolutePath().getParent();
        if (!sysfs.directIo(name) && bufferedSaid.add(pool)) {
            log.warn(
                    "the filesystem of {} takes no direct I/O in 512-byte sectors (e.g. ramfs, or a disk with "
                            + "larger sectors): loop devices of its images go through the page cache, which costs memory and "
                            + "a second copy of every block",
                    pool);
        }
        return device;
    }

    @Override
    public LoopDevice refreshCapacity(LoopDevice device) {
        calls.setCapacity(device);
        return sysfs.read(device.name())
                .orElseThrow(() -> StorageException.internal(
                        "loop device %s vanished while its capacity was refreshed", device.device()));
    }

    /**
     * An autoclear device was detached already (LOOP_CLR_FD while it was open) and frees itself
     * on last close, at any moment; its number may then go at once to another volume's stage.
     * So it is never detached again, only waited for: a second LOOP_CLR_FD could hit that
     * other volume's device. A device still open after the grace period (a process, or a copy of
     * a mount in another mount namespace, holds it) is left detaching itself: nothing of the
     * driver's is left to undo, so that is success, logged with the holders. A device that would
     * not even take the detach is BUSY, with its holders named, for a retry.
     */
    @Override
    public void detach(LoopDevice device) {
        Optional<LoopDevice> current = sysfs.current(device);
        boolean detaching = current.isPresent() && current.get().autoclear();
        if (current.isPresent() && !detaching) {
            log.info("detaching {} from {}", device.device(), device.backingFile());
            int errno = calls.detach(device);
            // ENXIO, "No such device or address": it was detached meanwhile, which is what we want.
            if (errno != 0 && sysfs.current(device).isPresent()) {
                throw StorageException.internal(
                        "cannot detach %s from %s: %s", device.device(), device.backingFile(), Libc.strerror(errno));
            }
        }
        long deadline = System.nanoTime() + detachGrace.toNanos();
        for (Optional<LoopDevice> still = sysfs.current(device); still.isPresent(); still = sysfs.current(device)) {
            if (System.nanoTime() > deadline) {
                List<String> holding = holders.of(device.device(), device.number());
                String held = holding.isEmpty() ? "" : ": " + String.join("; ", holding);
                if (still.get().autoclear()) {
                    log.warn(
                            "{} of {} is still in use{}; it detaches itself once released",
                            device.device(),
                            device.backingFile(),
                            held);
                    return;
                }
                throw StorageException.busy(
                        "%s is still bound to %s after its detach, so it is still in use%s",
                        device.device(), device.backingFile(), held);
            }
            sleep();
        }
    }

    private static void sleep() {
        try {
            Thread.sleep(50);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw StorageException.internal("interrupted while waiting for a loop device to detach");
        }
    }
}
