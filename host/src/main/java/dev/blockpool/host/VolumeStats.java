package dev.blockpool.host;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/** NodeGetVolumeStats on the host: usage and health of a volume where it is mounted or bound. */
public final class VolumeStats {

    /** Usage and health of a volume at a path; usage is empty when it cannot be measured. */
    public record Usage(Optional<FsStats> filesystem, Optional<Long> blockBytes, boolean abnormal, String message) {
    }

    private final LoopAttachments loops;
    private final Filesystems filesystems;
    private final MountTable table;

    public VolumeStats(LoopAttachments loops, Filesystems filesystems, MountTable table) {
        this.loops = loops;
        this.filesystems = filesystems;
        this.table = table;
    }

    /** Empty when the volume is not mounted at the path. */
    public Optional<Usage> usage(Path image, Path path) {
        PathState state = PathState.of(path);
        Optional<MountInfo> mount = table.at(path);
        if (state instanceof PathState.Missing || mount.isEmpty()) {
            return Optional.empty();
        }
        // One look at the device: a concurrent unstage may detach it between two.
        Optional<LoopDevice> device = loops.loopOf(mount.get());
        MountOwner owner = LoopAttachments.ownerOf(mount.get(), image, device);
        if (owner == MountOwner.OTHER) {
            return Optional.empty();
        }
        if (owner == MountOwner.BROKEN || device.isEmpty()) {
            return Optional.of(abnormal("the loop device behind %s is gone".formatted(path)));
        }
        if (state instanceof PathState.Broken broken) {
            return Optional.of(abnormal("%s cannot be read: %s".formatted(path, broken.reason())));
        }
        LoopDevice loop = device.get();
        String problem = loop.autoclear() ? "%s was detached while in use".formatted(loop.device())
                : loop.backingFileDeleted() ? "the image %s was deleted while in use".formatted(image)
                : !Files.exists(image) ? "the image %s is missing".formatted(image) : "";
        boolean abnormal = !problem.isEmpty();
        String message = abnormal ? problem : "healthy";
        if (state instanceof PathState.File) {
            return Optional.of(new Usage(Optional.empty(), Optional.of(loop.sizeBytes()), abnormal, message));
        }
        return Optional.of(new Usage(Optional.of(filesystems.stats(path)), Optional.empty(), abnormal, message));
    }

    private static Usage abnormal(String message) {
        return new Usage(Optional.empty(), Optional.empty(), true, message);
    }
}
