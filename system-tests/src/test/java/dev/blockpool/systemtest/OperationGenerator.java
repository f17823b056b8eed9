package dev.blockpool.systemtest;

import static dev.blockpool.systemtest.CallerModel.MiB;
import static dev.blockpool.systemtest.CallerModel.NODE_ID;

import csi.v1.Csi;
import csi.v1.Csi.VolumeCapability;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import dev.blockpool.csi.CsiRequests;
import dev.blockpool.pool.Ids;
import dev.blockpool.systemtest.CallerModel.Kind;
import dev.blockpool.systemtest.CallerModel.Payload;
import dev.blockpool.systemtest.CallerModel.Snapshot;
import dev.blockpool.systemtest.CallerModel.Volume;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * Picks the caller's next step at random among those the sidecars and kubelet could take now,
 * given what they believe: they only ever send requests that are valid for that belief
 * (ControllerPublish before NodeStage, unpublish before unstage, nothing published before a
 * delete), so every definite error answer is a violation. Also builds the steps the final
 * checks need.
 */
final class OperationGenerator {

    static final List<String> PODS = List.of("pod-a", "pod-b");
    private static final int MAX_VOLUMES = 8;
    private static final int MAX_SNAPSHOTS = 5;
    private static final long MAX_CAPACITY = 512 * MiB;
    /** Data slots of a block volume: below 64 MiB, within the smallest volume. */
    private static final int BLOCK_SLOTS = 8;

    private final CallerModel model;
    private final Random random;
    private final HostInspector host;
    /** Whether ext4 can grow while mounted here: resize2fs needs CAP_SYS_RESOURCE, which a container may lack. */
    private final boolean growsExt4;

    OperationGenerator(CallerModel model, Random random, HostInspector host, boolean growsExt4) {
        this.model = model;
        this.random = random;
        this.host = host;
        this.growsExt4 = growsExt4;
    }

    private record Choice(double weight, Supplier<Operation> make) {}

    /** A pod's publish of a volume. */
    private record Target(Volume volume, String pod) {}

    /**
     * First the kind of step, with fixed weights among the kinds possible now, then its object at
     * random, so that the mix stays the same however many volumes are in which state. Each step
     * up a volume's life (attach, stage, publish) weighs about as much as the step back down, so
     * volumes keep going through all of it.
     */
    Operation next() {
        List<Volume> volumes = model.healthyVolumes();
        List<Snapshot> snapshots = model.healthySnapshots();
        // Snapshots and clones copy an image: only of volumes nobody has mounted, since the driver does not
        // freeze a filesystem, and a copy of a mounted one is only as consistent as the copy happens to be.
        List<Volume> cold = volumes.stream().filter(v -> !v.staged).toList();
        List<Target> unpublished = new ArrayList<>();
        List<Target> published = new ArrayList<>();
        for (Volume v : volumes) {
            for (String pod : PODS) {
                if (v.pods.contains(pod)) {
                    published.add(new Target(v, pod));
                } else if (v.staged) {
                    unpublished.add(new Target(v, pod));
                }
            }
        }
        List<Choice> choices = new ArrayList<>();
        boolean room = volumes.size() < MAX_VOLUMES;
        when(choices, room, volumes.size() < 3 ? 20 : 6, () -> createVolume(Optional.empty()));
        when(
                choices,
                room && !snapshots.isEmpty(),
                3,
                () -> createVolume(Optional.of(pick(snapshots).id())));
        when(choices, room && !cold.isEmpty(), 2, () -> createVolume(Optional.of(pick(cold).id)));
        any(choices, 6, volumes, Volume::idle, this::deleteVolume);
        any(choices, snapshots.size() < MAX_SNAPSHOTS ? 6 : 0, cold, v -> true, this::createSnapshot);
        any(choices, snapshots.size() > 2 ? 6 : 2, snapshots, s -> true, this::deleteSnapshot);
        any(choices, 7, volumes, v -> !v.attached, this::controllerPublish);
        any(choices, 5, volumes, v -> v.attached && !v.staged, this::controllerUnpublish);
        any(choices, 9, volumes, v -> v.attached && !v.staged, this::nodeStage);
        any(choices, 8, volumes, v -> v.staged && v.pods.isEmpty(), this::nodeUnstage);
        any(choices, 8, unpublished, t -> true, t -> nodePublish(t.volume(), t.pod()));
        any(choices, 7, published, t -> true, t -> nodeUnpublish(t.volume(), t.pod()));
        any(choices, 9, published, t -> true, t -> writeData(t.volume(), t.pod()));
        any(choices, 3, published, t -> !t.volume().data.isEmpty(), t -> verifyData(t.volume(), t.pod()));
        any(
                choices,
                4,
                volumes,
                v -> v.capacity + 64 * MiB <= MAX_CAPACITY,
                v -> controllerExpand(v, v.capacity + 64 * MiB));
        any(
                choices,
                6,
                published,
                t -> t.volume().nodeExpansionPending && (growsExt4 || t.volume().kind == Kind.BLOCK),
                t -> nodeExpand(t.volume(), t.pod()));
        double at = random.nextDouble()
                * choices.stream().mapToDouble(Choice::weight).sum();
        for (Choice choice : choices) {
            at -= choice.weight();
            if (at < 0) {
                return choice.make().get();
            }
        }
        return choices.getLast().make().get();
    }

    private static void when(List<Choice> choices, boolean possible, double weight, Supplier<Operation> make) {
        if (possible && weight > 0) {
            choices.add(new Choice(weight, make));
        }
    }

    /** A step on one object, at random, of those {@code eligible}; none when there are none. */
    private <T> void any(
            List<Choice> choices, double weight, List<T> objects, Predicate<T> eligible, Function<T, Operation> make) {
        List<T> candidates = objects.stream().filter(eligible).toList();
        when(choices, !candidates.isEmpty(), weight, () -> make.apply(pick(candidates)));
    }

    private <T> T pick(List<T> from) {
        return from.get(random.nextInt(from.size()));
    }

    private static VolumeCapability capability(Kind kind) {
        return kind == Kind.EXT4
                ? CsiRequests.mount("ext4", Mode.SINGLE_NODE_WRITER)
                : CsiRequests.block(Mode.SINGLE_NODE_WRITER);
    }

    // Controller side: what external-provisioner, -snapshotter, -attacher and -resizer send.

    /**
     * A new volume: empty, or restored from a snapshot ID, or cloned from a volume ID (the same kind, maybe larger).
     */
    Operation createVolume(Optional<String> sourceId) {
        String name = model.newName("pvc");
        Optional<Snapshot> snapshot = sourceId.map(model.snapshots::get);
        Optional<Volume> clone = sourceId.map(model.volumes::get);
        Kind kind;
        long sourceSize;
        Map<String, Payload> data;
        var request = Csi.CreateVolumeRequest.newBuilder().setName(name);
        if (snapshot.isPresent()) {
            kind = snapshot.get().kind();
            sourceSize = snapshot.get().size();
            data = snapshot.get().data();
            request.setVolumeContentSource(Csi.VolumeContentSource.newBuilder()
                    .setSnapshot(Csi.VolumeContentSource.SnapshotSource.newBuilder()
                            .setSnapshotId(snapshot.get().id())));
        } else if (clone.isPresent()) {
            kind = clone.get().kind;
            sourceSize = clone.get().capacity;
            data = clone.get().data;
            request.setVolumeContentSource(Csi.VolumeContentSource.newBuilder()
                    .setVolume(Csi.VolumeContentSource.VolumeSource.newBuilder().setVolumeId(clone.get().id)));
        } else {
            kind = random.nextInt(10) < 7 ? Kind.EXT4 : Kind.BLOCK;
            sourceSize = 0;
            data = Map.of();
        }
        long size = sourceId.isPresent()
                ? sourceSize + (random.nextBoolean() ? 0 : 64 * MiB)
                : (2 + random.nextInt(3)) * 64 * MiB;
        Csi.CreateVolumeRequest sent = request.addVolumeCapabilities(capability(kind))
                .setCapacityRange(Csi.CapacityRange.newBuilder().setRequiredBytes(size))
                .build();
        Map<String, Payload> copied = new TreeMap<>(data);
        String what = sourceId.map(id -> (snapshot.isPresent() ? " from snapshot " : " cloned from ") + id)
                .orElse("");
        return new Operation.Call(
                "CreateVolume",
                "CreateVolume %s (%s, %d MiB%s)".formatted(name, kind.name().toLowerCase(), size / MiB, what),
                Ids.volumeIdFor(name),
                driver -> driver.controller().createVolume(sent),
                answer -> {
                    Csi.Volume created = ((Csi.CreateVolumeResponse) answer).getVolume();
                    Volume volume = new Volume(name, created.getVolumeId(), kind, created.getCapacityBytes());
                    volume.data.putAll(copied);
                    // A filesystem restored into a larger volume keeps its size until NodeExpand grows it.
                    volume.nodeExpansionPending = kind == Kind.EXT4 && size > sourceSize && sourceId.isPresent();
                    model.volumes.put(volume.id, volume);
                    if (created.getCapacityBytes() < size) {
                        return Optional.of("CreateVolume answered %d bytes, less than the %d required"
                                .formatted(created.getCapacityBytes(), size));
                    }
                    return Optional.of(created.getVolumeId())
                            .filter(id -> !id.equals(Ids.volumeIdFor(name)))
                            .map(id -> "CreateVolume answered the ID " + id + ", not the one derived from its name");
                });
    }

    Operation deleteVolume(Volume v) {
        var request = Csi.DeleteVolumeRequest.newBuilder().setVolumeId(v.id).build();
        return new Operation.Call(
                "DeleteVolume",
                "DeleteVolume " + v,
                v.id,
                driver -> driver.controller().deleteVolume(request),
                answer -> {
                    model.volumes.remove(v.id);
                    return Optional.empty();
                });
    }

    Operation createSnapshot(Volume v) {
        String name = model.newName("snapshot");
        var request = Csi.CreateSnapshotRequest.newBuilder()
                .setName(name)
                .setSourceVolumeId(v.id)
                .build();
        Map<String, Payload> data = new TreeMap<>(v.data);
        long size = v.capacity;
        return new Operation.Call(
                "CreateSnapshot",
                "CreateSnapshot %s of %s".formatted(name, v),
                Ids.snapshotIdFor(name),
                driver -> driver.controller().createSnapshot(request),
                answer -> {
                    Csi.Snapshot taken = ((Csi.CreateSnapshotResponse) answer).getSnapshot();
                    model.snapshots.put(
                            taken.getSnapshotId(),
                            new Snapshot(name, taken.getSnapshotId(), v.id, v.kind, taken.getSizeBytes(), data));
                    if (!taken.getSourceVolumeId().equals(v.id)
                            || taken.getSizeBytes() != size
                            || !taken.getReadyToUse()) {
                        return Optional.of(
                                "CreateSnapshot answered " + taken.toString().replace('\n', ' '));
                    }
                    return Optional.empty();
                });
    }

    Operation deleteSnapshot(Snapshot s) {
        var request =
                Csi.DeleteSnapshotRequest.newBuilder().setSnapshotId(s.id()).build();
        return new Operation.Call(
                "DeleteSnapshot",
                "DeleteSnapshot " + s,
                s.id(),
                driver -> driver.controller().deleteSnapshot(request),
                answer -> {
                    model.snapshots.remove(s.id());
                    return Optional.empty();
                });
    }

    Operation controllerPublish(Volume v) {
        var request = Csi.ControllerPublishVolumeRequest.newBuilder()
                .setVolumeId(v.id)
                .setNodeId(NODE_ID)
                .setVolumeCapability(capability(v.kind))
                .setReadonly(false)
                .build();
        return new Operation.Call(
                "ControllerPublishVolume",
                "ControllerPublishVolume " + v,
                v.id,
                driver -> driver.controller().controllerPublishVolume(request),
                answer -> {
                    v.attached = true;
                    return Optional.empty();
                });
    }

    Operation controllerUnpublish(Volume v) {
        var request = Csi.ControllerUnpublishVolumeRequest.newBuilder()
                .setVolumeId(v.id)
                .setNodeId(NODE_ID)
                .build();
        return new Operation.Call(
                "ControllerUnpublishVolume",
                "ControllerUnpublishVolume " + v,
                v.id,
                driver -> driver.controller().controllerUnpublishVolume(request),
                answer -> {
                    v.attached = false;
                    return Optional.empty();
                });
    }

    Operation controllerExpand(Volume v, long size) {
        var request = Csi.ControllerExpandVolumeRequest.newBuilder()
                .setVolumeId(v.id)
                .setCapacityRange(Csi.CapacityRange.newBuilder().setRequiredBytes(size))
                .setVolumeCapability(capability(v.kind))
                .build();
        return new Operation.Call(
                "ControllerExpandVolume",
                "ControllerExpandVolume %s to %d MiB".formatted(v, size / MiB),
                v.id,
                driver -> driver.controller().controllerExpandVolume(request),
                answer -> {
                    var expanded = (Csi.ControllerExpandVolumeResponse) answer;
                    v.capacity = expanded.getCapacityBytes();
                    v.nodeExpansionPending |= expanded.getNodeExpansionRequired();
                    return expanded.getCapacityBytes() < size
                            ? Optional.of("ControllerExpandVolume answered " + expanded.getCapacityBytes() + " bytes")
                            : Optional.empty();
                });
    }

    // Node side: what kubelet sends, with the directories it makes and removes itself.

    Operation nodeStage(Volume v) {
        Path staging = model.staging(v);
        var request = Csi.NodeStageVolumeRequest.newBuilder()
                .setVolumeId(v.id)
                .setStagingTargetPath(staging.toString())
                .setVolumeCapability(capability(v.kind))
                .putPublishContext("readonly", "false");
        if (v.kind == Kind.EXT4) {
            request.putVolumeContext("fsType", "ext4");
        }
        Csi.NodeStageVolumeRequest sent = request.build();
        return new Operation.Call(
                "NodeStageVolume",
                "NodeStageVolume " + v,
                v.id,
                driver -> {
                    // kubelet makes the directory that holds the staging path (block: the path itself).
                    mkdirs(v.kind == Kind.EXT4 ? staging.getParent() : staging);
                    return driver.node().nodeStageVolume(sent);
                },
                answer -> {
                    v.staged = true;
                    return Optional.empty();
                });
    }

    Operation nodeUnstage(Volume v) {
        Path staging = model.staging(v);
        var request = Csi.NodeUnstageVolumeRequest.newBuilder()
                .setVolumeId(v.id)
                .setStagingTargetPath(staging.toString())
                .build();
        return new Operation.Call(
                "NodeUnstageVolume",
                "NodeUnstageVolume " + v,
                v.id,
                driver -> driver.node().nodeUnstageVolume(request),
                answer -> {
                    v.staged = false;
                    // kubelet removes the directory; one that is not empty held writes that missed the volume.
                    return removeEmptyDirectory(staging);
                });
    }

    Operation nodePublish(Volume v, String pod) {
        Path target = model.target(v, pod);
        var request = Csi.NodePublishVolumeRequest.newBuilder()
                .setVolumeId(v.id)
                .setStagingTargetPath(model.staging(v).toString())
                .setTargetPath(target.toString())
                .setVolumeCapability(capability(v.kind))
                .setReadonly(false)
                .putPublishContext("readonly", "false");
        if (v.kind == Kind.EXT4) {
            request.putVolumeContext("fsType", "ext4");
        }
        Csi.NodePublishVolumeRequest sent = request.build();
        return new Operation.Call(
                "NodePublishVolume",
                "NodePublishVolume %s for %s".formatted(v, pod),
                v.id,
                driver -> {
                    mkdirs(target.getParent()); // kubelet's; the target itself is the driver's to make
                    return driver.node().nodePublishVolume(sent);
                },
                answer -> {
                    v.pods.add(pod);
                    return Optional.empty();
                });
    }

    Operation nodeUnpublish(Volume v, String pod) {
        Path target = model.target(v, pod);
        var request = Csi.NodeUnpublishVolumeRequest.newBuilder()
                .setVolumeId(v.id)
                .setTargetPath(target.toString())
                .build();
        return new Operation.Call(
                "NodeUnpublishVolume",
                "NodeUnpublishVolume %s for %s".formatted(v, pod),
                v.id,
                driver -> driver.node().nodeUnpublishVolume(request),
                answer -> {
                    v.pods.remove(pod);
                    if (Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
                        return Optional.of("NodeUnpublishVolume succeeded but left " + target);
                    }
                    // kubelet removes the volume's directory of the pod; a block volume's holds the other pods' files.
                    return v.kind == Kind.EXT4 || v.pods.isEmpty()
                            ? removeEmptyDirectory(target.getParent())
                            : Optional.empty();
                });
    }

    /** kubelet's NodeExpandVolume after a ControllerExpand: volume_path is the pod's target. */
    Operation nodeExpand(Volume v, String pod) {
        long required = v.capacity;
        var request = Csi.NodeExpandVolumeRequest.newBuilder()
                .setVolumeId(v.id)
                .setVolumePath(model.target(v, pod).toString())
                .setStagingTargetPath(model.staging(v).toString())
                .setCapacityRange(Csi.CapacityRange.newBuilder().setRequiredBytes(required))
                .setVolumeCapability(capability(v.kind))
                .build();
        return new Operation.Call(
                "NodeExpandVolume",
                "NodeExpandVolume %s at %s".formatted(v, pod),
                v.id,
                driver -> driver.node().nodeExpandVolume(request),
                answer -> {
                    v.nodeExpansionPending = false;
                    long capacity = ((Csi.NodeExpandVolumeResponse) answer).getCapacityBytes();
                    return capacity < required
                            ? Optional.of("NodeExpandVolume answered " + capacity + " bytes, " + required + " required")
                            : Optional.empty();
                });
    }

    // What pods do.

    /** Writes a file (filesystem) or a range of the device (block), fsyncs it, and believes it from then on. */
    Operation writeData(Volume v, String pod) {
        Path target = model.target(v, pod);
        byte[] bytes = new byte[(16 + random.nextInt(241)) * 4096]; // 64 KiB to 1 MiB
        random.nextBytes(bytes);
        String key = v.kind == Kind.EXT4 ? "file-" + random.nextInt(6) : "slot-" + random.nextInt(BLOCK_SLOTS);
        return new Operation.PodAction(
                "write",
                "write and fsync %d KiB as %s of %s through %s".formatted(bytes.length / 1024, key, v, pod),
                v.id,
                () -> {
                    if (host.mountsAt(target).isEmpty()) {
                        return Optional.of("the caller believes %s is published at %s, but nothing is mounted there"
                                .formatted(v, target));
                    }
                    Payload payload = v.kind == Kind.EXT4
                            ? PodData.writeFile(target, key, bytes)
                            : PodData.writeDevice(target, (8 + 4L * Integer.parseInt(key.substring(5))) * MiB, bytes);
                    v.data.put(key, payload);
                    return Optional.empty();
                });
    }

    Operation verifyData(Volume v, String pod) {
        Path target = model.target(v, pod);
        return new Operation.PodAction(
                "read",
                "read back the %d fsync'd payloads of %s through %s".formatted(v.data.size(), v, pod),
                v.id,
                () -> {
                    if (host.mountsAt(target).isEmpty()) {
                        return Optional.of("the caller believes %s is published at %s, but nothing is mounted there"
                                .formatted(v, target));
                    }
                    List<String> wrong = PodData.verify(target, v.kind, v.data);
                    return wrong.isEmpty()
                            ? Optional.empty()
                            : Optional.of("fsync'd data of " + v + " differs: " + String.join("; ", wrong));
                });
    }

    private static void mkdirs(Path dir) {
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Optional<String> removeEmptyDirectory(Path dir) {
        try {
            Files.deleteIfExists(dir);
            return Optional.empty();
        } catch (DirectoryNotEmptyException e) {
            return Optional.of(dir + " is not empty once unmounted: writes went into the directory, not the volume");
        } catch (IOException e) {
            return Optional.of("cannot remove " + dir + ": " + e);
        }
    }
}
