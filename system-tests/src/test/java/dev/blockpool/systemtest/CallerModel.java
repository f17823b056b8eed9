package dev.blockpool.systemtest;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What the caller (the sidecars and kubelet together) believes, built only from the answers it
 * got: an object exists after a successful Create answer and stops existing after a successful
 * Delete answer; a volume is attached, staged or published after the successful answer to that
 * call. Data is believed once it was written and fsync'd.
 */
final class CallerModel {

    static final String NODE_ID = "system-test-node";
    static final long MiB = 1L << 20;

    enum Kind {
        EXT4,
        BLOCK
    }

    /** Bytes written at {@code offset} of a file (filesystem) or of the device (block), and their SHA-256. */
    record Payload(long offset, int length, String sha256) {}

    static final class Volume {
        final String name;
        final String id;
        final Kind kind;
        long capacity;
        boolean attached;
        boolean staged;
        final Set<String> pods = new TreeSet<>();
        /** ControllerExpand grew the image; NodeExpand has not yet grown the device and filesystem. */
        boolean nodeExpansionPending;
        /** File name (filesystem) or slot name (block) to the fsync'd payload there. */
        final Map<String, Payload> data = new TreeMap<>();

        Volume(String name, String id, Kind kind, long capacity) {
            this.name = name;
            this.id = id;
            this.kind = kind;
            this.capacity = capacity;
        }

        boolean idle() {
            return !attached && !staged && pods.isEmpty();
        }

        @Override
        public String toString() {
            return name + " (" + id + ", " + kind.name().toLowerCase() + ", " + capacity / MiB + " MiB)";
        }
    }

    record Snapshot(String name, String id, String sourceVolumeId, Kind kind, long size, Map<String, Payload> data) {
        @Override
        public String toString() {
            return name + " (" + id + " of " + sourceVolumeId + ")";
        }
    }

    private final Path dir;
    final Map<String, Volume> volumes = new LinkedHashMap<>();
    final Map<String, Snapshot> snapshots = new LinkedHashMap<>();
    /** IDs a violation touched: the caller's view of them is no longer trustworthy, so they are left alone. */
    final Set<String> damaged = new LinkedHashSet<>();

    private int names;

    CallerModel(Path dir) {
        this.dir = dir;
    }

    /** A name never used before, as the provisioner and snapshotter derive them from object UIDs. */
    String newName(String prefix) {
        return prefix + "-" + ++names;
    }

    List<Volume> healthyVolumes() {
        return volumes.values().stream().filter(v -> !damaged.contains(v.id)).toList();
    }

    List<Snapshot> healthySnapshots() {
        return snapshots.values().stream().filter(s -> !damaged.contains(s.id)).toList();
    }

    Optional<Volume> volume(String id) {
        return Optional.ofNullable(volumes.get(id));
    }

    // Paths as kubelet lays them out, all below the test's directory.

    Path kubelet() {
        return dir.resolve("kubelet");
    }

    /** NodeStage's staging_target_path: the global mount of a filesystem, a plain directory for block. */
    Path staging(Volume volume) {
        return volume.kind == Kind.EXT4
                ? kubelet().resolve("plugins/kubernetes.io/csi/blockpool.csi.dev/" + volume.name + "/globalmount")
                : kubelet().resolve("plugins/kubernetes.io/csi/volumeDevices/staging/" + volume.name);
    }

    /** NodePublish's target_path: a directory the driver creates (filesystem) or a file it binds the device onto. */
    Path target(Volume volume, String pod) {
        return volume.kind == Kind.EXT4
                ? kubelet().resolve("pods/" + pod + "/volumes/kubernetes.io~csi/" + volume.name + "/mount")
                : kubelet().resolve("plugins/kubernetes.io/csi/volumeDevices/publish/" + volume.name + "/" + pod);
    }
}
