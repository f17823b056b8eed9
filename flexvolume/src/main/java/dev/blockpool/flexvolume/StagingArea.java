package dev.blockpool.flexvolume;

import dev.blockpool.host.mounts.MountInfo;
import dev.blockpool.host.mounts.MountTable;
import dev.blockpool.pool.Ids;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Where FlexVolume volumes are staged: {@code flexvolume/staging/<volumeID>} beside the node
 * plugin's socket, in the plugin's own directory on the host (the node DaemonSet's
 * {@code /var/lib/kubelet/plugins/blockpool.csi.dev}, which the plugin also sees at that path
 * through its kubelet directory). The directory's name is the volume's ID, so the mount table
 * alone says which volume backs a pod's mount: the pod's mount is a bind of the staging mount and
 * shares its device. A staging mount that no other mount shares has no user left.
 *
 * <p>kubelet runs calls for different volumes at once. Stage-then-publish and
 * unpublish-then-unstage each hold {@link #lock()}, a lock on one file here that the kernel
 * releases when the process ends however it ends, so an unmount never unstages a volume that a
 * mount has just staged for its publish.
 */
final class StagingArea {

    private final Path root;
    private final Path lockFile;
    private final MountTable table;

    StagingArea(Path socket, MountTable table) {
        Path flexvolume = MountTable.asListed(socket.toAbsolutePath()).resolveSibling("flexvolume");
        this.root = flexvolume.resolve("staging");
        this.lockFile = flexvolume.resolve("lock");
        this.table = table;
    }

    Path root() {
        return root;
    }

    Path stagingOf(String volumeId) {
        return root.resolve(volumeId);
    }

    /** Holds the area until the returned channel is closed; waits while another call holds it. */
    FileChannel lock() {
        try {
            Files.createDirectories(root);
            FileChannel channel = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            try {
                channel.lock();
                return channel;
            } catch (IOException | RuntimeException e) {
                channel.close();
                throw e;
            }
        } catch (IOException e) {
            throw new FlexFailure("cannot lock %s: %s", lockFile, e.getMessage());
        }
    }

    /**
     * The volume mounted at {@code target} through this area, if any; a mount there of anything
     * else is a Failure, since unmounting it is not blockpool's to do.
     */
    Optional<String> volumeMountedAt(Path target) {
        Path listed = MountTable.asListed(target);
        Optional<MountInfo> mount = table.at(listed);
        if (mount.isEmpty()) {
            return Optional.empty();
        }
        Optional<String> volume = table.ofDevice(mount.get().device()).stream()
                .map(MountInfo::mountPoint)
                .filter(p -> root.equals(p.getParent())
                        && Ids.isVolumeId(p.getFileName().toString()))
                .map(p -> p.getFileName().toString())
                .findFirst();
        if (volume.isEmpty()) {
            throw new FlexFailure(
                    "%s is not a blockpool FlexVolume mount (no volume staged in %s shares its device); "
                            + "it is left as it is",
                    target, root);
        }
        return volume;
    }

    /** The volumes with a staging directory here, mounted or not. */
    List<String> stagedVolumes() {
        List<String> volumes = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(root)) {
            for (Path entry : entries) {
                String name = entry.getFileName().toString();
                if (Ids.isVolumeId(name)) {
                    volumes.add(name);
                }
            }
        } catch (NoSuchFileException e) {
            return List.of();
        } catch (IOException e) {
            throw new FlexFailure("cannot list %s: %s", root, e.getMessage());
        }
        return volumes;
    }

    /** Whether anything besides the staging mount itself uses the volume's staged filesystem. */
    boolean inUse(String volumeId) {
        Path staging = stagingOf(volumeId);
        return table.at(staging)
                .map(mount -> table.ofDevice(mount.device()).stream()
                        .anyMatch(other -> !other.mountPoint().equals(staging)))
                .orElse(false);
    }

    /** Removes a staging directory once nothing is mounted on it; one that is not empty is kept. */
    void removeStagingDirectory(String volumeId) {
        Path staging = stagingOf(volumeId);
        if (table.at(staging).isPresent()) {
            return;
        }
        try {
            Files.deleteIfExists(staging);
        } catch (IOException e) {
            throw new FlexFailure("cannot remove the staging directory %s: %s", staging, e.getMessage());
        }
    }
}
