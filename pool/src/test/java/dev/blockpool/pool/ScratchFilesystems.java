package dev.blockpool.pool;

import dev.blockpool.common.HostRequirements;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Deque;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The real filesystems of a test class, registered as a field with {@code @RegisterExtension}:
 * its tests run only as root with loop devices (skipped otherwise), and every filesystem a test
 * made is unmounted and detached after it, whatever happened in it.
 */
final class ScratchFilesystems implements BeforeEachCallback, AfterEachCallback {

    private final Deque<ScratchFilesystem> made = new ArrayDeque<>();

    @Override
    public void beforeEach(ExtensionContext context) {
        HostRequirements.assumeRootWithLoopDevices();
        HostRequirements.assumeCommand("losetup");
    }

    /**
     * A filesystem of {@code sizeBytes} made by {@code mkfs} (skipped without it) under {@code workDir}; its mount
     * point.
     */
    Path make(Path workDir, long sizeBytes, String... mkfs) {
        HostRequirements.assumeCommand(mkfs[0]);
        return keep(ScratchFilesystem.create(workDir, sizeBytes, mkfs));
    }

    /** A tmpfs of {@code sizeBytes} under {@code workDir}: a filesystem that maps no extents; its mount point. */
    Path tmpfs(Path workDir, long sizeBytes) {
        return keep(ScratchFilesystem.tmpfs(workDir, sizeBytes));
    }

    private Path keep(ScratchFilesystem fs) {
        made.push(fs);
        return fs.mountPoint();
    }

    @Override
    public void afterEach(ExtensionContext context) {
        while (!made.isEmpty()) {
            made.pop().close();
        }
    }
}
