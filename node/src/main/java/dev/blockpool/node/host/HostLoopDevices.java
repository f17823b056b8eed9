package dev.blockpool.node.host;

import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.CsiException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/** Loop devices through {@code losetup}, read back from sysfs. */
public final class HostLoopDevices implements LoopDevices {

    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    /** How long a detached device may take to disappear (udev or blkid may hold it briefly). */
    private static final Duration DETACH_GRACE = Duration.ofSeconds(5);

    private final CommandRunner runner;
    private final LoopSysfs sysfs;

    public HostLoopDevices(CommandRunner runner) {
        this(runner, new LoopSysfs(Path.of("/sys/block"), Path.of("/dev")));
    }

    public HostLoopDevices(CommandRunner runner, LoopSysfs sysfs) {
        this.runner = runner;
        this.sysfs = sysfs;
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
        return sysfs.read(name).orElseThrow(() -> CsiException.internal(
                "`%s` reported %s, but sysfs shows no image bound to it", String.join(" ", command), device));
    }

    @Override
    public LoopDevice refreshCapacity(LoopDevice device) {
        runner.runChecked(TIMEOUT, List.of("losetup", "--set-capacity", device.device().toString()));
        return sysfs.read(device.name()).orElseThrow(() -> CsiException.internal(
                "loop device %s vanished while its capacity was refreshed", device.device()));
    }

    @Override
    public void detach(LoopDevice device) {
        if (stillBound(device)) {
            CommandRunner.Result result = runner.run(TIMEOUT, List.of("losetup", "--detach", device.device().toString()));
            // "No such device or address": it was detached meanwhile, which is what we want.
            if (!result.ok() && stillBound(device)) {
                throw CsiException.internal("cannot detach %s from %s: %s", device.device(), device.backingFile(),
                        result.describe());
            }
        }
        long deadline = System.nanoTime() + DETACH_GRACE.toNanos();
        while (stillBound(device)) {
            if (System.nanoTime() > deadline) {
                List<String> holders = new DeviceHolders(Path.of("/proc")).of(device.device(), device.number());
                throw CsiException.internal("%s is still bound to %s after losetup --detach, so it is still in use%s; "
                        + "it detaches itself once released", device.device(), device.backingFile(),
                        holders.isEmpty() ? "" : ": " + String.join("; ", holders));
            }
            sleep();
        }
    }

    private boolean stillBound(LoopDevice device) {
        return sysfs.read(device.name()).filter(d -> d.backingFile().equals(device.backingFile())).isPresent();
    }

    private static void sleep() {
        try {
            Thread.sleep(50);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw CsiException.internal("interrupted while waiting for a loop device to detach");
        }
    }
}
