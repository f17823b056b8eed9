package dev.blockpool.host;

import dev.blockpool.common.StorageException;
import dev.blockpool.host.cgroups.LinuxPodCgroupCalls;
import dev.blockpool.host.mounts.MountTable;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * Which staging and target paths the node accepts. kubelet gives paths below its own directory;
 * a path in the kernel's pseudo-filesystems or /dev, in the driver's pool, the driver's socket
 * or its working directory can never be one, and is refused before anything is made, mounted or
 * removed there.
 */
public final class KubeletPaths {

    private static final List<Path> SYSTEM = List.of(Path.of("/proc"), Path.of("/sys"), Path.of("/dev"));

    private final Path pool;
    private final Path socket;
    private final Path workingDirectory;

    public KubeletPaths(Path pool, Path socket) {
        this.pool = realPath(pool);
        this.socket = MountTable.asListed(socket.toAbsolutePath());
        this.workingDirectory = realPath(Path.of(""));
    }

    /** The path as the mount table lists it; INVALID when it is one the node never works on. */
    public Path check(String field, Path given) {
        Path path = MountTable.asListed(given);
        for (Path system : SYSTEM) {
            if (path.startsWith(system)) {
                throw StorageException.invalid(
                        "%s %s is inside %s, where no volume is ever staged or published", field, given, system);
            }
        }
        if (path.startsWith(pool) || pool.startsWith(path)) {
            throw StorageException.invalid(
                    "%s %s overlaps the driver's pool %s; kubelet's paths never do", field, given, pool);
        }
        if (path.equals(socket) || path.equals(workingDirectory)) {
            throw StorageException.invalid(
                    "%s %s is the driver's own %s", field, given, path.equals(socket) ? "socket" : "working directory");
        }
        return path;
    }

    /**
     * The UID of the pod a publish target is for, from where kubelet puts it under its root
     * directory: {@code pods/<uid>/volumes/kubernetes.io~csi/<volume>/mount} for a file system
     * (an inline volume's too), {@code plugins/kubernetes.io/csi/volumeDevices/publish/<volume>/<uid>}
     * for a raw block device. Empty for any other path.
     */
    public static Optional<String> podUidOf(Path target) {
        int n = target.getNameCount();
        Optional<String> uid = Optional.empty();
        if (n >= 6
                && name(target, n - 1).equals("mount")
                && name(target, n - 3).equals("kubernetes.io~csi")
                && name(target, n - 4).equals("volumes")
                && name(target, n - 6).equals("pods")) {
            uid = Optional.of(name(target, n - 5));
        } else if (n >= 6
                && name(target, n - 3).equals("publish")
                && name(target, n - 4).equals("volumeDevices")
                && name(target, n - 5).equals("csi")
                && name(target, n - 6).equals("kubernetes.io")) {
            uid = Optional.of(name(target, n - 1));
        }
        return uid.filter(LinuxPodCgroupCalls::isPodUid);
    }

    private static String name(Path path, int index) {
        return path.getName(index).toString();
    }

    private static Path realPath(Path path) {
        try {
            return path.toRealPath();
        } catch (IOException e) {
            return path.toAbsolutePath().normalize();
        }
    }
}
