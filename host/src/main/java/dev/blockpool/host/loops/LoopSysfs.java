package dev.blockpool.host.loops;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.StorageException;
import dev.blockpool.host.mounts.DeviceNumber;
import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;

/**
 * The one reader of loop devices in sysfs: {@code /sys/block/loopN/{dev,size,ro}} and, while
 * the device is bound, {@code /sys/block/loopN/loop/{backing_file,autoclear,dio}}; a device
 * number leads to its name through {@code /sys/dev/block/MAJOR:MINOR}, the sibling of
 * {@code /sys/block}. The identity of each device's backing file, which sysfs does not show,
 * comes from its {@link LoopStatus}.
 */
public final class LoopSysfs {

    /** The block major of every loop device (its minor depends on the module's max_part). */
    public static final int LOOP_MAJOR = 7;

    private static final String DELETED = " (deleted)";

    private final Path sysBlock;
    private final Path sysDevBlock;
    private final Path devDir;
    private final LoopStatus status;
    private final Map<DeviceNumber, Path> directories = new ConcurrentHashMap<>();

    /** This host's: /sys/block, and the device nodes in /dev, whose status is read on the threads of {@code blocking}. */
    public static LoopSysfs onThisHost(BlockingCalls blocking) {
        Path dev = Path.of("/dev");
        return new LoopSysfs(Path.of("/sys/block"), dev, LinuxLoopCalls.status(blocking, dev));
    }

    LoopSysfs(Path sysBlock, Path devDir, LoopStatus status) {
        this.sysBlock = sysBlock;
        this.sysDevBlock = sysBlock.resolveSibling("dev").resolve("block");
        this.devDir = devDir;
        this.status = status;
    }

    public List<LoopDevice> list() {
        return scan(Optional.empty());
    }

    /**
     * The devices whose backing file has this name (the last name of its path, the same in every
     * mount namespace): the only candidates for an image of that name. Only their backing files
     * are read of the others.
     */
    public List<LoopDevice> backedByFileNamed(Path fileName) {
        return scan(Optional.of(fileName));
    }

    private List<LoopDevice> scan(Optional<Path> fileName) {
        List<LoopDevice> devices = new ArrayList<>();
        try (Stream<Path> entries = Files.list(sysBlock)) {
            for (Path entry : entries.filter(p -> p.getFileName().toString().startsWith("loop"))
                    .sorted()
                    .toList()) {
                read(entry.getFileName().toString(), fileName, Optional.empty()).ifPresent(devices::add);
            }
        } catch (IOException e) {
            throw StorageException.io(e, "cannot list the loop devices in %s", sysBlock);
        }
        return List.copyOf(devices);
    }

    /** The device named {@code loopN}, if it is bound (an unbound or vanished device is empty). */
    public Optional<LoopDevice> read(String name) {
        return read(name, Optional.empty(), Optional.empty());
    }

    /**
     * The bound device with this number: one device read, not a scan. Asked about the device
     * behind a mount on every node call, so it reads no file it can do without: the number is the
     * one asked for.
     */
    public Optional<LoopDevice> byNumber(DeviceNumber number) {
        return byNumber(number, status);
    }

    /** {@link #byNumber}, the identity of its backing file taken from {@code status}. */
    public Optional<LoopDevice> byNumber(DeviceNumber number, LoopStatus status) {
        return directoryOf(number).flatMap(dir -> read(dir, Optional.empty(), Optional.of(number), status));
    }

    /**
     * The directory of the loop device with this number, where its link in /sys/dev/block leads.
     * Kept once read: the loop driver gives device loopN the same number whenever it exists (from
     * N and the module's max_part), and resolving the link, which sysfs builds anew at each look,
     * cost more than the read of the file behind it.
     */
    private Optional<Path> directoryOf(DeviceNumber number) {
        if (number.major() != LOOP_MAJOR) {
            return Optional.empty();
        }
        Path known = directories.get(number);
        if (known != null) {
            return Optional.of(known);
        }
        Path link = sysDevBlock.resolve(number.toString());
        try {
            Path directory = link.resolveSibling(Files.readSymbolicLink(link)).normalize();
            directories.put(number, directory);
            return Optional.of(directory);
        } catch (IOException | UnsupportedOperationException e) {
            return Optional.empty(); // no such device (or removed while we were reading)
        }
    }

    private record BackingFile(Path path, boolean deleted) {}

    /** The device's backing file; empty when it is unbound. */
    private static Optional<BackingFile> backingFile(Path dir) throws IOException {
        Optional<String> backing = readIfExists(dir.resolve("loop/backing_file"));
        if (backing.isEmpty() || backing.get().isEmpty()) {
            return Optional.empty();
        }
        String file = backing.get();
        boolean deleted = file.endsWith(DELETED);
        return Optional.of(new BackingFile(
                Path.of(deleted ? file.substring(0, file.length() - DELETED.length()) : file), deleted));
    }

    /** The device as it is now, if it is still bound to the same image. */
    public Optional<LoopDevice> current(LoopDevice device) {
        return read(device.name()).filter(d -> d.backingFileId().equals(device.backingFileId()));
    }

    /** The number of the device named {@code loopN}, bound or not, if the kernel has it. */
    public Optional<DeviceNumber> deviceNumber(String name) {
        try {
            return readIfExists(sysBlock.resolve(name).resolve("dev")).map(DeviceNumber::parse);
        } catch (IOException e) {
            throw StorageException.io(e, "cannot read the loop device %s", sysBlock.resolve(name));
        }
    }

    /** Whether the bound device does direct I/O on its backing file (LO_FLAGS_DIRECT_IO took). */
    public boolean directIo(String name) {
        try {
            return "1"
                    .equals(readIfExists(sysBlock.resolve(name).resolve("loop/dio"))
                            .orElse("0"));
        } catch (IOException e) {
            throw StorageException.io(e, "cannot read the loop device %s", sysBlock.resolve(name));
        }
    }

    /** {@code number}: the device's number when the caller knows it (its dev file is not read then). */
    private Optional<LoopDevice> read(String name, Optional<Path> fileName, Optional<DeviceNumber> number) {
        return read(sysBlock.resolve(name), fileName, number, status);
    }

    /** The device whose sysfs directory is {@code dir}, named as it is. */
    private Optional<LoopDevice> read(
            Path dir, Optional<Path> fileName, Optional<DeviceNumber> number, LoopStatus status) {
        String name = dir.getFileName().toString();
        Path backingFile = dir.resolve("loop/backing_file");
        if (number.isEmpty() && !Files.exists(backingFile)) {
            // Unbound: sysfs has no loop/ directory. Checked without an exception, which a scan of
            // many unbound devices would pay for each; a device asked for by number is bound.
            return Optional.empty();
        }
        return whileBound(dir, d -> {
            Optional<BackingFile> backing = backingFile(d);
            if (backing.isEmpty()
                    || fileName.isPresent()
                            && !fileName.get().equals(backing.get().path().getFileName())) {
                return Optional.empty();
            }
            DeviceNumber read = number.isPresent()
                    ? number.get()
                    : DeviceNumber.parse(Files.readString(d.resolve("dev")).strip());
            Optional<FileId> id = status.backingFileId(name, read);
            if (id.isEmpty()) {
                return Optional.empty(); // detached since its backing file was read
            }
            Set<LoopDevice.Flag> flags = EnumSet.noneOf(LoopDevice.Flag.class);
            if (backing.get().deleted()) {
                flags.add(LoopDevice.Flag.BACKING_FILE_DELETED);
            }
            if ("1".equals(Files.readString(d.resolve("ro")).strip())) {
                flags.add(LoopDevice.Flag.READ_ONLY);
            }
            if ("1".equals(readIfExists(d.resolve("loop/autoclear")).orElse("0"))) {
                flags.add(LoopDevice.Flag.AUTOCLEAR);
            }
            return Optional.of(new LoopDevice(
                    name,
                    devDir.resolve(name),
                    read,
                    backing.get().path(),
                    id.get(),
                    flags,
                    Long.parseLong(Files.readString(d.resolve("size")).strip()) * 512));
        });
    }

    /** Reads of one device's files. */
    private interface DeviceRead<T> {
        Optional<T> from(Path dir) throws IOException;
    }

    /** {@code read} of the device at {@code dir}; empty when the device went away while it was read. */
    private static <T> Optional<T> whileBound(Path dir, DeviceRead<T> read) {
        try {
            return read.from(dir);
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

    /**
     * ENODEV from sysfs: the device was removed while its files were read. Opening a file of it
     * fails with a FileSystemException carrying the reason; a read of a file already open fails
     * with a plain IOException whose message is the reason.
     */
    static boolean isGone(IOException e) {
        String reason = e instanceof FileSystemException fse ? fse.getReason() : e.getMessage();
        return "No such device".equals(reason);
    }

    private static Optional<String> readIfExists(Path file) throws IOException {
        try {
            return Optional.of(Files.readString(file).strip());
        } catch (NoSuchFileException e) {
            return Optional.empty();
        }
    }
}
