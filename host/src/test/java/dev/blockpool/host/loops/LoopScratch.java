package dev.blockpool.host.loops;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.HostRequirements;
import dev.blockpool.common.ProcessCommandRunner;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real-host test's own temporary directory, with the loop devices and mounts made in it, as a
 * JUnit extension registered on a field: before each test it makes the directory (root only);
 * after it, it undoes each device and mount, last made first, even when one fails, then deletes
 * the directory. It only ever detaches devices its own attaches returned.
 */
public final class LoopScratch implements BeforeEachCallback, AfterEachCallback {

    public static final long MiB = 1L << 20;
    public static final CommandRunner RUNNER = new ProcessCommandRunner();

    private final String prefix;
    /** What to undo, last made first. */
    private final Deque<Runnable> undo = new ArrayDeque<>();

    private Path dir;

    public LoopScratch(String prefix) {
        this.prefix = prefix;
    }

    @Override
    public void beforeEach(ExtensionContext context) throws IOException {
        HostRequirements.assumeRootWithLoopDevices();
        dir = Files.createTempDirectory(prefix);
    }

    public Path dir() {
        return dir;
    }

    /** Runs {@code step} on close, before what was made earlier is undone. */
    public void undo(Runnable step) {
        undo.push(step);
    }

    /** A sparse file of {@code bytes}. */
    public static Path image(Path where, String name, long bytes) throws IOException {
        Path image = where.resolve(name);
        try (RandomAccessFile file = new RandomAccessFile(image.toFile(), "rw")) {
            file.setLength(bytes);
        }
        return image;
    }

    public LoopDevice attach(LoopDevices devices, Path image, boolean readOnly) {
        LoopDevice device = devices.attach(image, readOnly);
        undo(() -> devices.detach(device));
        return device;
    }

    /** Runs the mount {@code command} that mounts at {@code where}, and unmounts it on close. */
    public void mount(Path where, String... command) throws IOException {
        Files.createDirectories(where);
        RUNNER.runChecked(command);
        undo(() -> RUNNER.runChecked("umount", where.toString()));
    }

    /** An ext4 file system made on {@code image}, mounted at {@code mountPoint} through a loop device. */
    public void mountExt4(LoopDevices devices, Path image, Path mountPoint) throws IOException {
        HostRequirements.assumeCommand("mkfs.ext4");
        RUNNER.runChecked("mkfs.ext4", "-q", image.toString());
        LoopDevice disk = attach(devices, image, false);
        mount(mountPoint, "mount", "-t", "ext4", disk.device().toString(), mountPoint.toString());
    }

    @Override
    public void afterEach(ExtensionContext context) throws IOException {
        List<RuntimeException> failures = new ArrayList<>();
        while (!undo.isEmpty()) {
            try {
                undo.pop().run();
            } catch (RuntimeException e) {
                failures.add(e);
            }
        }
        if (dir != null) {
            try (Stream<Path> walk = Files.walk(dir)) {
                for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
        assertThat(failures).as("cleaning up").isEmpty();
    }
}
