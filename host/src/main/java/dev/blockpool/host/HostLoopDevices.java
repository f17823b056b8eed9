package dev.blockpool.host;

import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.StorageException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Loop devices through {@code losetup}, read back from sysfs. */
public final class HostLoopDevices implements LoopDevices {

    private static final Logger log = LoggerFactory.getLogger(HostLoopDevices.class);
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    /** How long a detached device may take to disappear (udev or blkid may hold it briefly). */
    private static final Duration DETACH_GRACE = Duration.ofSeconds(5);

    private final CommandRunner runner;
    private final LoopSysfs sysfs;
    private final Duration detachGrace;

    public HostLoopDevices(CommandRunner runner) {
        this(runner, new LoopSysfs(Path.of("/sys/block"), Path.of("/dev")));
    }

    public HostLoopDevices(CommandRunner runner, LoopSysfs sysfs) {
        this(runner, sysfs, DETACH_GRACE);
    }

    HostLoopDevices(CommandRunner runner, LoopSysfs sysfs, Duration detachGrace) {
        this.runner = runner;
        this.sysfs = sysfs;
        this.detachGrace = detachGrace;
    }

    @Override
    public List<LoopDevice> list() {
        return sysfs.list();
    }

    @Override
    public LoopDevice attach(Path image, boolean readOnly) {
        List<String> command = readOnly
                ? List.of("losetup", "--find", "--show", "--read-only", image.toString())
                : List.of("losetup", "--find", "--show", image.toString());
        String device = runner.runChecked(TIMEOUT, command).stdout().strip();
        String name = Path.of(device).getFileName().toString();
        log.info("attached {} to {}{}", image, device, readOnly ? " read-only" : "");
        return sysfs.read(name).orElseThrow(() -> StorageException.internal(
                "`%s` reported %s, but sysfs shows no image bound to it", String.join(" ", command), device));
    }

    @Override
    public LoopDevice refreshCapacity(LoopDevice device) {
        runner.runChecked(TIMEOUT, List.of("losetup", "--set-capacity", device.device().toString()));
        return sysfs.read(device.name()).orElseThrow(() -> StorageException.internal(
                "loop device %s vanished while its capacity was refreshed", device.device()));
    }

    /**
     * An autoclear device was detached already ({@code losetup -d} while it was open) and frees
     * itself on last close, at any moment; its number may then go at once to another volume's
     * stage. So it is never detached again, only waited for: a {@code losetup -d} could hit that
     * other volume's device. A device still open after the grace period (a process, or a copy of
     * a mount in another mount namespace, holds it) is left detaching itself: nothing of the
     * driver's is left to undo, so that is success, logged with the holders. A device that would
     * not even take the detach is BUSY, with its holders named, for a retry.
     */
    @Override
    public void detach(LoopDevice device) {
        Optional<LoopDevice> current = bound(device);
        boolean detaching = current.isPresent() && current.get().autoclear();
        if (current.isPresent() && !detaching) {
            log.info("detaching {} from {}", device.device(), device.backingFile());
            CommandRunner.Result result = runner.run(TIMEOUT, List.of("losetup", "--detach", device.device().toString()));
            // "No such device or address": it was detached meanwhile, which is what we want.
            if (!result.ok() && bound(device).isPresent()) {
                throw StorageException.internal("cannot detach %s from %s: %s", device.device(), device.backingFile(),
                        result.describe());
            }
        }
        long deadline = System.nanoTime() + detachGrace.toNanos();
        for (Optional<LoopDevice> still = bound(device); still.isPresent(); still = bound(device)) {
            if (System.nanoTime() > deadline) {
                List<String> holders = new DeviceHolders(Path.of("/proc")).of(device.device(), device.number());
                String held = holders.isEmpty() ? "" : ": " + String.join("; ", holders);
                if (still.get().autoclear()) {
                    log.warn("{} of {} is still in use{}; it detaches itself once released", device.device(),
                            device.backingFile(), held);
                    return;
                }
                throw StorageException.busy("%s is still bound to %s after losetup --detach, so it is still in use%s",
                        device.device(), device.backingFile(), held);
            }
            sleep();
        }
    }

    /** The device as it is now, if it is still bound to the same image. */
    private Optional<LoopDevice> bound(LoopDevice device) {
        return sysfs.read(device.name()).filter(d -> d.backingFile().equals(device.backingFile()));
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
