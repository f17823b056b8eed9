package dev.blockpool.common;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Guards for the integration tests that drive real loop devices, mkfs and mount: they run as
 * root where loop devices exist, and are skipped with the reason otherwise.
 */
public final class HostRequirements {

    private HostRequirements() {}

    public static boolean isRoot() {
        try {
            return ((Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid")) == 0;
        } catch (java.io.IOException | UnsupportedOperationException e) {
            return false;
        }
    }

    public static void assumeRootWithLoopDevices() {
        assumeTrue(isRoot(), "skipped: needs root to attach loop devices and mount filesystems");
        assumeTrue(
                Files.exists(Path.of("/dev/loop-control")),
                "skipped: no /dev/loop-control on this host (loop module not loaded?)");
    }

    public static void assumeCommand(String name) {
        boolean found = Files.isExecutable(Path.of("/usr/sbin", name))
                || Files.isExecutable(Path.of("/sbin", name))
                || Files.isExecutable(Path.of("/usr/bin", name))
                || Files.isExecutable(Path.of("/bin", name));
        assumeTrue(found, "skipped: `" + name + "` is not installed");
    }

    /** CAP_SYS_RESOURCE: online ext4 growth (resize2fs of a mounted filesystem) needs it. */
    public static final int CAP_SYS_RESOURCE = 24;

    /** Whether this process has the capability in its effective set (children inherit it). */
    public static boolean hasCapability(int capability) {
        try {
            String line = Files.readAllLines(Path.of("/proc/self/status")).stream()
                    .filter(l -> l.startsWith("CapEff:"))
                    .findFirst()
                    .orElse("CapEff: 0");
            long effective =
                    Long.parseUnsignedLong(line.substring("CapEff:".length()).strip(), 16);
            return (effective & (1L << capability)) != 0;
        } catch (java.io.IOException e) {
            return false;
        }
    }
}
