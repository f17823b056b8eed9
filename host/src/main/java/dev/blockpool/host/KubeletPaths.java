package dev.blockpool.host;

import dev.blockpool.common.StorageException;
import dev.blockpool.host.mounts.MountTable;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

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

    private static Path realPath(Path path) {
        try {
            return path.toRealPath();
        } catch (IOException e) {
            return path.toAbsolutePath().normalize();
        }
    }
}
