package dev.blockpool.systemtest;

import static dev.blockpool.systemtest.CallerModel.NODE_ID;

import csi.v1.Csi;
import dev.blockpool.host.loops.LoopDevice;
import dev.blockpool.host.mounts.MountInfo;
import dev.blockpool.systemtest.CallerModel.Kind;
import dev.blockpool.systemtest.CallerModel.Volume;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * After every step (once it has its definite answer), the driver's answers, the pool's files
 * and the host must show exactly what the caller believes: the same volumes and snapshots, each
 * committed with an image of the believed size, mounted where and only where it is staged or
 * published, and one loop device per staged volume.
 *
 * <p>One allowance: an image without a record of an ID the caller does not believe in, and a
 * temporary record file, are what a kill inside a delete (or inside a record's write) leaves
 * by design. A retried delete finds no record and answers success at once; the driver's
 * reconcile removes such files only once they are older than its settle time (10 minutes, with
 * no flag to shorten it). They are tolerated until the check {@code afterSettleTime}, which
 * runs after the pool's files were aged past that time and the driver restarted.
 */
final class Invariants {

    /** A violation found by a check; {@code key} identifies it, so that one fault is reported once. */
    record Problem(String key, String subjectId, String text) {}

    private final CallerModel model;
    private final HostInspector host;
    /** Leftovers seen so far that only the reconcile removes: IDs and temporary file names. */
    final Set<String> awaitingReconcile = new TreeSet<>();

    Invariants(CallerModel model, HostInspector host) {
        this.model = model;
        this.host = host;
    }

    List<Problem> check(DriverProcess driver, boolean afterSettleTime) {
        List<Problem> problems = new ArrayList<>();
        listedVolumes(driver, problems);
        listedSnapshots(driver, problems);
        Map<String, Long> volumes = new HashMap<>();
        model.healthyVolumes().forEach(v -> volumes.put(v.id, v.capacity));
        poolFiles("volumes", volumes, afterSettleTime, problems);
        Map<String, Long> snapshots = new HashMap<>();
        model.healthySnapshots().forEach(s -> snapshots.put(s.id(), s.size()));
        poolFiles("snapshots", snapshots, afterSettleTime, problems);
        mounts(problems);
        loops(problems);
        return problems;
    }

    private void listedVolumes(DriverProcess driver, List<Problem> problems) {
        Map<String, Csi.ListVolumesResponse.Entry> listed = new LinkedHashMap<>();
        try {
            String token = "";
            do {
                var page = driver.controller()
                        .listVolumes(Csi.ListVolumesRequest.newBuilder()
                                .setStartingToken(token)
                                .build());
                page.getEntriesList().forEach(e -> listed.put(e.getVolume().getVolumeId(), e));
                token = page.getNextToken();
            } while (!token.isEmpty());
        } catch (StatusRuntimeException e) {
            problems.add(new Problem("ListVolumes", "", "ListVolumes failed: " + e.getStatus()));
            return;
        }
        for (Volume v : model.healthyVolumes()) {
            var entry = listed.remove(v.id);
            if (entry == null) {
                problems.add(new Problem(
                        "missing:" + v.id,
                        v.id,
                        "ListVolumes does not show " + v + ", which the caller believes exists"));
                continue;
            }
            if (entry.getVolume().getCapacityBytes() != v.capacity) {
                problems.add(new Problem(
                        "capacity:" + v.id,
                        v.id,
                        "ListVolumes shows %s with %d bytes, the caller believes %d"
                                .formatted(v, entry.getVolume().getCapacityBytes(), v.capacity)));
            }
            List<String> nodes = entry.getStatus().getPublishedNodeIdsList();
            if (!nodes.equals(v.attached ? List.of(NODE_ID) : List.of())) {
                problems.add(new Problem(
                        "attached:" + v.id,
                        v.id,
                        "ListVolumes shows %s published to %s, the caller ".formatted(v, nodes)
                                + (v.attached ? "believes it is attached" : "believes it is not")));
            }
        }
        listed.keySet().stream()
                .filter(id -> !model.damaged.contains(id))
                .forEach(id -> problems.add(new Problem(
                        "unbelieved:" + id,
                        id,
                        "ListVolumes shows " + id + ", which the caller does not believe exists")));
        try {
            String token = "";
            do {
                var page = driver.controller()
                        .controllerListVolumeHealth(Csi.ControllerListVolumeHealthRequest.newBuilder()
                                .setStartingToken(token)
                                .build());
                for (Csi.VolumeHealth health : page.getEntriesList()) {
                    if (model.healthyVolumes().stream().anyMatch(v -> v.id.equals(health.getVolumeId()))) {
                        problems.add(new Problem(
                                "health:" + health.getVolumeId(),
                                health.getVolumeId(),
                                "ControllerListVolumeHealth calls %s abnormal: %s"
                                        .formatted(health.getVolumeId(), health.getHealthStatusesList())));
                    }
                }
                token = page.getNextToken();
            } while (!token.isEmpty());
        } catch (StatusRuntimeException e) {
            problems.add(new Problem(
                    "ControllerListVolumeHealth", "", "ControllerListVolumeHealth failed: " + e.getStatus()));
        }
    }

    private void listedSnapshots(DriverProcess driver, List<Problem> problems) {
        Map<String, Csi.Snapshot> listed = new LinkedHashMap<>();
        try {
            String token = "";
            do {
                var page = driver.controller()
                        .listSnapshots(Csi.ListSnapshotsRequest.newBuilder()
                                .setStartingToken(token)
                                .build());
                page.getEntriesList().forEach(e -> listed.put(e.getSnapshot().getSnapshotId(), e.getSnapshot()));
                token = page.getNextToken();
            } while (!token.isEmpty());
        } catch (StatusRuntimeException e) {
            problems.add(new Problem("ListSnapshots", "", "ListSnapshots failed: " + e.getStatus()));
            return;
        }
        for (CallerModel.Snapshot s : model.healthySnapshots()) {
            Csi.Snapshot snapshot = listed.remove(s.id());
            if (snapshot == null) {
                problems.add(new Problem(
                        "missing:" + s.id(),
                        s.id(),
                        "ListSnapshots does not show " + s + ", which the caller believes exists"));
            } else if (snapshot.getSizeBytes() != s.size()
                    || !snapshot.getSourceVolumeId().equals(s.sourceVolumeId())
                    || !snapshot.getReadyToUse()) {
                problems.add(new Problem(
                        "snapshot:" + s.id(),
                        s.id(),
                        "ListSnapshots shows " + snapshot.toString().replace('\n', ' ') + " for " + s));
            }
        }
        listed.keySet().stream()
                .filter(id -> !model.damaged.contains(id))
                .forEach(id -> problems.add(new Problem(
                        "unbelieved:" + id,
                        id,
                        "ListSnapshots shows " + id + ", which the caller does not believe exists")));
    }

    /**
     * The pool directory holds a committed record with an image of the right size for each believed ID, and no others.
     */
    private void poolFiles(String kind, Map<String, Long> believed, boolean afterSettleTime, List<Problem> problems) {
        HostInspector.PoolFiles files = host.poolFiles(kind);
        believed.forEach((id, size) -> {
            if (!files.records().contains(id)) {
                problems.add(new Problem(
                        "record:" + id,
                        id,
                        "the pool has no record for " + id
                                + ", which the caller believes exists"
                                + (files.images().containsKey(id)
                                        ? " (its image is there: the reconcile or a retried create may remove it)"
                                        : "")));
            }
            Long imageSize = files.images().get(id);
            if (imageSize == null) {
                problems.add(new Problem(
                        "image:" + id, id, "the pool has no image for " + id + ", which the caller believes exists"));
            } else if (imageSize.longValue() != size) {
                problems.add(new Problem(
                        "size:" + id,
                        id,
                        "the image of %s is %d bytes, the caller believes %d".formatted(id, imageSize, size)));
            }
        });
        for (String id : files.records()) {
            if (!believed.containsKey(id) && !model.damaged.contains(id)) {
                problems.add(new Problem(
                        "unbelieved:" + id,
                        id,
                        "the pool holds the record of " + id
                                + ", which the caller does not believe exists"
                                + (files.images().containsKey(id) ? "" : " (and no image)")));
            }
        }
        for (String id : files.images().keySet()) {
            if (believed.containsKey(id) || files.records().contains(id) || model.damaged.contains(id)) {
                continue;
            }
            if (afterSettleTime) {
                problems.add(new Problem(
                        "leftover:" + id,
                        id,
                        "the image " + kind + "/" + id + ".img without a record is still there after"
                                + " the start-up reconcile past the settle time"));
            } else {
                awaitingReconcile.add(id);
            }
        }
        for (String temporary : files.temporary()) {
            if (afterSettleTime) {
                problems.add(new Problem(
                        "leftover:" + temporary,
                        "",
                        "the temporary file " + kind + "/" + temporary
                                + " is still there after the start-up reconcile past the settle time"));
            } else {
                awaitingReconcile.add(temporary);
            }
        }
        files.other()
                .forEach(name -> problems.add(
                        new Problem("other:" + name, "", "the pool holds an unexpected file " + kind + "/" + name)));
    }

    /** Mounted exactly at the staging paths of staged filesystem volumes and at published targets, once each. */
    private void mounts(List<Problem> problems) {
        Map<Path, Volume> owners = new HashMap<>();
        Map<Path, String> expected = new LinkedHashMap<>();
        for (Volume v : model.volumes.values()) {
            boolean healthy = !model.damaged.contains(v.id);
            owners.put(canonical(model.staging(v)), v);
            if (healthy && v.staged && v.kind == Kind.EXT4) {
                expected.put(canonical(model.staging(v)), "staged");
            }
            for (String pod : OperationGenerator.PODS) {
                owners.put(canonical(model.target(v, pod)), v);
                if (healthy && v.pods.contains(pod)) {
                    expected.put(canonical(model.target(v, pod)), "published for " + pod);
                }
            }
        }
        Map<Path, List<MountInfo>> mounted = host.mountsUnder().stream()
                .collect(Collectors.groupingBy(MountInfo::mountPoint, LinkedHashMap::new, Collectors.toList()));
        mounted.forEach((point, mounts) -> {
            Volume owner = owners.get(point);
            String subject = owner == null ? "" : owner.id;
            if (owner != null && model.damaged.contains(owner.id)) {
                return;
            }
            if (mounts.size() > 1) {
                problems.add(new Problem(
                        "stacked:" + point,
                        subject,
                        mounts.size() + " mounts are stacked at " + point + (owner == null ? "" : " (" + owner + ")")));
            }
            if (!expected.containsKey(point)) {
                problems.add(new Problem(
                        "mount:" + point,
                        subject,
                        point + " is mounted, but the caller believes "
                                + (owner == null
                                        ? "nothing is mounted there"
                                        : owner + " is not staged or published there")));
            } else if (owner != null) {
                sameDevice(owner, point, mounts.getFirst(), problems);
            }
        });
        expected.forEach((point, what) -> {
            if (!mounted.containsKey(point)) {
                Volume owner = owners.get(point);
                problems.add(new Problem(
                        "unmounted:" + point,
                        owner.id,
                        "the caller believes " + owner + " is " + what + ", but nothing is mounted at " + point));
            }
        });
    }

    /** A volume's mounts are of its own loop device: its filesystem, or a bind of its device node. */
    private void sameDevice(Volume owner, Path point, MountInfo mount, List<Problem> problems) {
        List<LoopDevice> loops = host.loopsOf(owner.id);
        boolean ours = loops.stream()
                .anyMatch(l -> owner.kind == Kind.EXT4
                        ? l.number().equals(mount.device())
                        : mount.root().equals("/" + l.name()));
        if (!ours) {
            problems.add(new Problem(
                    "device:" + point,
                    owner.id,
                    "%s at %s is not %s's loop device %s"
                            .formatted(
                                    owner.kind == Kind.EXT4
                                            ? "the filesystem " + mount.device()
                                            : "the device " + mount.root(),
                                    point,
                                    owner,
                                    loops.stream().map(LoopDevice::name).toList())));
        }
    }

    /** One loop device per staged volume, none for any other file of the pool. */
    private void loops(List<Problem> problems) {
        Map<Path, List<LoopDevice>> bound =
                host.poolLoops().stream().collect(Collectors.groupingBy(LoopDevice::backingFile));
        for (Volume v : model.healthyVolumes()) {
            List<LoopDevice> loops = bound.remove(host.volumeImage(v.id));
            int count = loops == null ? 0 : loops.size();
            if (count != (v.staged ? 1 : 0)) {
                problems.add(new Problem(
                        "loops:" + v.id,
                        v.id,
                        "%s has %d loop device(s) %s; the caller believes it is %s"
                                .formatted(
                                        v,
                                        count,
                                        loops == null
                                                ? ""
                                                : loops.stream()
                                                        .map(LoopDevice::name)
                                                        .toList(),
                                        v.staged ? "staged" : "not staged")));
            }
        }
        bound.forEach((file, loops) -> {
            String id = file.getFileName().toString().replace(".img", "");
            if (!model.damaged.contains(id)) {
                problems.add(new Problem(
                        "leaked-loop:" + file,
                        id,
                        "%s stay bound to %s, which the caller %s"
                                .formatted(
                                        loops.stream().map(LoopDevice::name).toList(),
                                        file,
                                        model.volumes.containsKey(id) ? "has not staged" : "does not believe exists")));
            }
        });
    }

    private static Path canonical(Path path) {
        return HostInspector.canonical(path);
    }
}
