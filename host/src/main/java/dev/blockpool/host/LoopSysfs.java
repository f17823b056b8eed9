package dev.blockpool.host;

import dev.blockpool.common.StorageException;
import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * The one reader of loop devices in sysfs: {@code /sys/block/loopN/{dev,size,ro}} and, while
 * the device is bound, {@code /sys/block/loopN/loop/{backing_file,autoclear}}.
 */
public final class LoopSysfs {

    private static final String DELETED = " (deleted)";

    private final Path sysBlock;
    private final Path devDir;

    public LoopSysfs(Path sysBlock, Path devDir) {
        this.sysBlock = sysBlock;
        this.devDir = devDir;
    }

    public List<LoopDevice> list() {
        List<LoopDevice> devices = new ArrayList<>();
        try (Stream<Path> entries = Files.list(sysBlock)) {
            for (Path entry : entries.filter(p -> p.getFileName().toString().startsWith("loop")).sorted().toList()) {
                read(entry.getFileName().toString()).ifPresent(devices::add);
            }
        } catch (IOException e) {
            throw StorageException.io(e, "cannot list the loop devices in %s", sysBlock);
        }
        return List.copyOf(devices);
    }

    /** The device named {@code loopN}, if it is bound (an unbound or vanished device is empty). */
    public Optional<LoopDevice> read(String name) {
        Path dir = sysBlock.resolve(name);
        try {
            Optional<String> backing = readIfExists(dir.resolve("loop/backing_file"));
            if (backing.isEmpty() || backing.get().isEmpty()) {
                return Optional.empty();
            }
            String file = backing.get();
            boolean deleted = file.endsWith(DELETED);
            if (deleted) {
                file = file.substring(0, file.length() - DELETED.length());
            }
            return Optional.of(new LoopDevice(name, devDir.resolve(name),
                    DeviceNumber.parse(Files.readString(dir.resolve("dev")).strip()),
                    Path.of(file), deleted,
                    "1".equals(Files.readString(dir.resolve("ro")).strip()),
                    "1".equals(readIfExists(dir.resolve("loop/autoclear")).orElse("0")),
                    Long.parseLong(Files.readString(dir.resolve("size")).strip()) * 512));
        } catch (NoSuchFileException e) {
            return Optional.empty(); // detached while we were reading
        } catch (IOException e) {
            if (isGone(e)) {
                return Optional.empty(); // removed while we were reading: sysfs answers ENODEV
            }
            throw StorageException.io(e, "cannot read the loop device %s", dir);
        } catch (IllegalArgumentException e) { // NumberFormatException included
            throw StorageException.internal(e, "unexpected contents in %s: %s", dir, e.getMessage());
        }
    }

    private static boolean isGone(IOException e) {
        return e instanceof FileSystemException fse && "No such device".equals(fse.getReason());
    }

    private static Optional<String> readIfExists(Path file) throws IOException {
        try {
            return Optional.of(Files.readString(file).strip());
        } catch (NoSuchFileException e) {
            return Optional.empty();
        }
    }

    /** The path as the kernel prints a backing file: absolute, normalized, symlinks resolved when it exists. */
    public static Path canonical(Path image) {
        try {
            return image.toRealPath();
        } catch (IOException e) {
            return image.toAbsolutePath().normalize();
        }
    }
}
