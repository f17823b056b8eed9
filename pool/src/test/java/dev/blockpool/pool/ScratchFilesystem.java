package dev.blockpool.pool;

import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.ProcessCommandRunner;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * A real filesystem for a test: a sparse backing file, attached to a loop device, formatted and
 * mounted on a directory. {@link #close()} undoes every step that was done, in reverse, even when
 * setting up failed half-way, so no mount or loop device outlives the test.
 */
final class ScratchFilesystem implements AutoCloseable {

    private final CommandRunner commands = new ProcessCommandRunner();
    private final Deque<Runnable> undo = new ArrayDeque<>();
    private Path mountPoint;
    private String device;

    /**
     * Makes a filesystem of {@code sizeBytes} with {@code mkfs} (e.g. {@code mkfs.xfs -q -m reflink=1}) under {@code
     * workDir}.
     */
    static ScratchFilesystem create(Path workDir, long sizeBytes, String... mkfs) {
        ScratchFilesystem fs = new ScratchFilesystem();
        try {
            fs.setUp(workDir, sizeBytes, mkfs);
            return fs;
        } catch (RuntimeException | Error e) {
            fs.close();
            throw e;
        }
    }

    /** A tmpfs of {@code sizeBytes} mounted under {@code workDir}: a filesystem that maps no extents (no FIEMAP). */
    static ScratchFilesystem tmpfs(Path workDir, long sizeBytes) {
        ScratchFilesystem fs = new ScratchFilesystem();
        try {
            fs.mount(workDir.resolve("tmpfs"), "-t", "tmpfs", "-o", "size=" + sizeBytes, "tmpfs");
            return fs;
        } catch (RuntimeException | Error e) {
            fs.close();
            throw e;
        }
    }

    private void setUp(Path workDir, long sizeBytes, String... mkfs) {
        Path backing = workDir.resolve("backing.raw");
        try (RandomAccessFile file = new RandomAccessFile(backing.toFile(), "rw")) {
            file.setLength(sizeBytes);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        undo.push(() -> deleteQuietly(backing));

        device = commands.runChecked("losetup", "--find", "--show", backing.toString())
                .stdout()
                .strip();
        String attached = device;
        undo.push(() -> commands.run("losetup", "--detach", attached));

        String[] format = new String[mkfs.length + 1];
        System.arraycopy(mkfs, 0, format, 0, mkfs.length);
        format[mkfs.length] = device;
        commands.runChecked(format);

        mount(workDir.resolve("mnt"), device);
    }

    /**
     * Mounts on {@code on} what {@code mount} names (its options, then the source), to be unmounted by {@link #close}.
     */
    private void mount(Path on, String... mount) {
        try {
            Files.createDirectories(on);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        String[] command = new String[mount.length + 2];
        command[0] = "mount";
        System.arraycopy(mount, 0, command, 1, mount.length);
        command[command.length - 1] = on.toString();
        commands.runChecked(command);
        mountPoint = on;
        undo.push(() -> {
            if (!commands.run("umount", on.toString()).ok()) {
                commands.run("umount", "--lazy", on.toString());
            }
        });
    }

    Path mountPoint() {
        return mountPoint;
    }

    String device() {
        return device;
    }

    @Override
    public void close() {
        while (!undo.isEmpty()) {
            undo.pop().run();
        }
    }

    private static void deleteQuietly(Path path) {
        try {
            Files.deleteIfExists(path);
        } catch (IOException ignored) {
            // @TempDir removes it
        }
    }
}
