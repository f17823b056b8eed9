package dev.blockpool.systemtest;

import com.google.protobuf.Message;
import csi.v1.Csi;
import csi.v1.Csi.VolumeCapability;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import dev.blockpool.csi.CsiRequests;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

/**
 * Well-formed requests for every method, made of the run's real state: the fixture volumes and
 * their kubelet-like paths, the volumes and snapshots the run created, what is staged and
 * published. A hostile value in one field of such a request gets past the checks of all the
 * others and reaches deep code. Also tracks what the driver said it staged and published, so
 * that the test can tear it all down through the driver at the end.
 */
final class Templates {

    static final String NODE_ID = "system-test-node";
    static final long SIZE = 16L << 20;

    /** A volume created at set-up that the whole run stages and publishes. */
    record Fixture(String name, String id, boolean block, FuzzTree.FixturePaths paths) {}

    /** A volume at a path, as the driver confirmed it. */
    record Placement(String volumeId, String path) {}

    private final Random random;
    private final FuzzTree tree;
    private final boolean growFixtures;
    final List<Fixture> fixtures = new ArrayList<>();
    final List<String> snapshots = new ArrayList<>();
    final List<String> disposableVolumes = new ArrayList<>();
    final Set<Placement> staged = new LinkedHashSet<>();
    final Set<Placement> published = new LinkedHashSet<>();
    /** The group snapshots the run created, by ID, with their members' IDs. */
    final Map<String, List<String>> groups = new LinkedHashMap<>();

    private String volumesToken = "";
    private String healthToken = "";
    private String snapshotsToken = "";

    Templates(Random random, FuzzTree tree, boolean growFixtures) {
        this.random = random;
        this.tree = tree;
        this.growFixtures = growFixtures;
    }

    static VolumeCapability capability(boolean block, Mode mode) {
        return block ? CsiRequests.block(mode) : CsiRequests.mount("ext4", mode);
    }

    private VolumeCapability capabilityOf(Fixture f) {
        Mode mode = switch (random.nextInt(6)) {
            case 0 -> Mode.SINGLE_NODE_MULTI_WRITER;
            case 1 -> Mode.SINGLE_NODE_SINGLE_WRITER;
            case 2 -> Mode.MULTI_NODE_READER_ONLY;
            default -> Mode.SINGLE_NODE_WRITER;
        };
        return capability(f.block(), mode);
    }

    /** The IDs the run knows to be real, for mixing into any field. */
    List<HostileValues.Value> realIds() {
        List<HostileValues.Value> ids = new ArrayList<>();
        fixtures.forEach(f -> ids.add(new HostileValues.Value(f.id(), "the ID of " + f.name())));
        snapshots.forEach(s -> ids.add(new HostileValues.Value(s, "a snapshot's ID")));
        disposableVolumes.stream()
                .limit(3)
                .forEach(v -> ids.add(new HostileValues.Value(v, "a disposable volume's ID")));
        ids.add(new HostileValues.Value(NODE_ID, "the node ID"));
        ids.add(new HostileValues.Value("other-node", "an unknown node ID"));
        ids.add(new HostileValues.Value("csi-inline-0", "an inline volume's handle"));
        ids.add(new HostileValues.Value("vol-" + "0".repeat(32), "an unknown volume ID"));
        ids.add(new HostileValues.Value("vol-" + "0".repeat(31), "a volume ID one digit short"));
        ids.add(new HostileValues.Value("VOL-" + "A".repeat(32), "an upper-case volume ID"));
        ids.add(new HostileValues.Value("snap-" + "0".repeat(32), "an unknown snapshot ID"));
        if (!fixtures.isEmpty()) {
            String id = fixtures.getFirst().id();
            ids.add(new HostileValues.Value(id + ".img", "a volume ID with .img"));
            ids.add(new HostileValues.Value(id + "/../" + fixtures.getLast().id(), "a volume ID with /../"));
        }
        return ids;
    }

    boolean isFixtureId(String id) {
        return fixtures.stream().anyMatch(f -> f.id().equals(id));
    }

    /** A well-formed request for {@code method}; {@code about} gets a few words on what it asks, if anything. */
    Message.Builder template(String method, StringBuilder about) {
        Fixture f = fixtures.get(random.nextInt(fixtures.size()));
        int pod = random.nextInt(FuzzTree.PODS);
        String target = f.paths().targets().get(pod).toString();
        String staging = f.paths().staging().toString();
        String disposable = disposable();
        about.append(
                switch (method) {
                    case "DeleteVolume", "ControllerPublishVolume", "ControllerUnpublishVolume" ->
                        "disposable " + disposable;
                    case "ListVolumes",
                            "GetCapacity",
                            "NodeGetCapabilities",
                            "NodeGetInfo",
                            "ControllerGetCapabilities",
                            "ControllerListVolumeHealth",
                            "NodeGetStorageHealth",
                            "GroupControllerGetCapabilities" -> "";
                    case "DeleteVolumeGroupSnapshot", "GetVolumeGroupSnapshot" -> "a group snapshot";
                    case "GetMetadataAllocated", "GetMetadataDelta" -> "snapshots";
                    default -> f.name();
                });
        return switch (method) {
            case "CreateVolume" -> {
                String name = "fuzz-disposable-" + random.nextInt(6);
                about.setLength(0);
                about.append(name);
                boolean block = random.nextBoolean();
                var request = Csi.CreateVolumeRequest.newBuilder()
                        .setName(name)
                        .setCapacityRange(Csi.CapacityRange.newBuilder().setRequiredBytes(SIZE))
                        .addVolumeCapabilities(capability(block, Mode.SINGLE_NODE_WRITER))
                        .putParameters("allocation", "sparse");
                if (!block) {
                    request.putParameters("fsType", "ext4");
                }
                switch (random.nextInt(4)) {
                    case 0 ->
                        request.setVolumeContentSource(Csi.VolumeContentSource.newBuilder()
                                .setVolume(Csi.VolumeContentSource.VolumeSource.newBuilder()
                                        .setVolumeId(f.id())));
                    case 1 ->
                        request.setVolumeContentSource(Csi.VolumeContentSource.newBuilder()
                                .setSnapshot(Csi.VolumeContentSource.SnapshotSource.newBuilder()
                                        .setSnapshotId(snapshot())));
                    default -> {}
                }
                if (random.nextBoolean()) {
                    request.setAccessibilityRequirements(Csi.TopologyRequirement.newBuilder()
                            .addRequisite(topology())
                            .addPreferred(topology()));
                }
                yield request;
            }
            case "DeleteVolume" -> Csi.DeleteVolumeRequest.newBuilder().setVolumeId(disposable);
            case "ControllerPublishVolume" ->
                Csi.ControllerPublishVolumeRequest.newBuilder()
                        .setVolumeId(disposable)
                        .setNodeId(NODE_ID)
                        .setVolumeCapability(capability(random.nextBoolean(), Mode.SINGLE_NODE_WRITER))
                        .setReadonly(random.nextInt(4) == 0);
            case "ControllerUnpublishVolume" ->
                Csi.ControllerUnpublishVolumeRequest.newBuilder()
                        .setVolumeId(disposable)
                        .setNodeId(NODE_ID);
            case "ValidateVolumeCapabilities" ->
                Csi.ValidateVolumeCapabilitiesRequest.newBuilder()
                        .setVolumeId(f.id())
                        .addVolumeCapabilities(capabilityOf(f));
            case "ListVolumes" ->
                Csi.ListVolumesRequest.newBuilder()
                        .setMaxEntries(random.nextInt(4))
                        .setStartingToken(random.nextBoolean() ? volumesToken : "");
            case "GetCapacity" ->
                Csi.GetCapacityRequest.newBuilder()
                        .addVolumeCapabilities(capabilityOf(f))
                        .putParameters("fsType", "ext4")
                        .setAccessibleTopology(topology());
            case "CreateSnapshot" ->
                Csi.CreateSnapshotRequest.newBuilder()
                        .setSourceVolumeId(f.id())
                        .setName("fuzz-snapshot-" + random.nextInt(3));
            case "DeleteSnapshot" ->
                Csi.DeleteSnapshotRequest.newBuilder()
                        .setSnapshotId(snapshots.size() > 1 ? snapshots.getLast() : "snap-" + "0".repeat(32));
            case "ListSnapshots" -> {
                var request = Csi.ListSnapshotsRequest.newBuilder()
                        .setMaxEntries(random.nextInt(4))
                        .setStartingToken(random.nextBoolean() ? snapshotsToken : "");
                switch (random.nextInt(3)) {
                    case 0 -> request.setSourceVolumeId(f.id());
                    case 1 -> request.setSnapshotId(snapshot());
                    default -> {}
                }
                yield request;
            }
            case "GetSnapshot" -> Csi.GetSnapshotRequest.newBuilder().setSnapshotId(snapshot());
            case "ControllerExpandVolume" -> {
                boolean fixture = growFixtures && random.nextInt(4) == 0;
                if (!fixture) {
                    about.setLength(0);
                    about.append("disposable ").append(disposable);
                }
                yield Csi.ControllerExpandVolumeRequest.newBuilder()
                        .setVolumeId(fixture ? f.id() : disposable)
                        .setCapacityRange(Csi.CapacityRange.newBuilder().setRequiredBytes(2 * SIZE))
                        .setVolumeCapability(capability(f.block(), Mode.SINGLE_NODE_WRITER));
            }
            case "ControllerGetVolume" ->
                Csi.ControllerGetVolumeRequest.newBuilder().setVolumeId(f.id());
            case "ControllerModifyVolume" ->
                Csi.ControllerModifyVolumeRequest.newBuilder().setVolumeId(f.id());
            case "NodeStageVolume" -> {
                about.append(" at its staging path");
                var request = Csi.NodeStageVolumeRequest.newBuilder()
                        .setVolumeId(f.id())
                        .setStagingTargetPath(staging)
                        .setVolumeCapability(capability(f.block(), Mode.SINGLE_NODE_WRITER));
                if (!f.block() && random.nextBoolean()) {
                    request.putVolumeContext("fsType", "ext4");
                }
                yield request;
            }
            case "NodeUnstageVolume" -> {
                about.append(" at its staging path");
                yield Csi.NodeUnstageVolumeRequest.newBuilder()
                        .setVolumeId(f.id())
                        .setStagingTargetPath(staging);
            }
            case "NodePublishVolume" -> {
                if (random.nextInt(8) == 0) {
                    yield inline(random.nextInt(FuzzTree.INLINE_TARGETS), about);
                }
                about.append(" at pod-").append(pod);
                yield Csi.NodePublishVolumeRequest.newBuilder()
                        .setVolumeId(f.id())
                        .setStagingTargetPath(staging)
                        .setTargetPath(target)
                        .setVolumeCapability(capability(f.block(), Mode.SINGLE_NODE_WRITER))
                        .setReadonly(random.nextInt(4) == 0);
            }
            case "NodeUnpublishVolume" -> {
                if (random.nextInt(8) == 0) {
                    int i = random.nextInt(FuzzTree.INLINE_TARGETS);
                    about.setLength(0);
                    about.append("inline volume ").append(i);
                    yield Csi.NodeUnpublishVolumeRequest.newBuilder()
                            .setVolumeId("csi-inline-" + i)
                            .setTargetPath(tree.inlineTargets().get(i).toString());
                }
                about.append(" at pod-").append(pod);
                yield Csi.NodeUnpublishVolumeRequest.newBuilder()
                        .setVolumeId(f.id())
                        .setTargetPath(target);
            }
            case "NodeGetVolumeStats" ->
                Csi.NodeGetVolumeStatsRequest.newBuilder()
                        .setVolumeId(f.id())
                        .setVolumePath(random.nextBoolean() || f.block() ? target : staging)
                        .setStagingTargetPath(staging);
            case "NodeExpandVolume" ->
                Csi.NodeExpandVolumeRequest.newBuilder()
                        .setVolumeId(f.id())
                        .setVolumePath(f.block() ? target : staging)
                        .setStagingTargetPath(staging)
                        .setVolumeCapability(capability(f.block(), Mode.SINGLE_NODE_WRITER));
            case "NodeGetCapabilities" -> Csi.NodeGetCapabilitiesRequest.newBuilder();
            case "NodeGetInfo" -> Csi.NodeGetInfoRequest.newBuilder();
            case "ControllerGetCapabilities" -> Csi.ControllerGetCapabilitiesRequest.newBuilder();
            case "ControllerGetVolumeHealth" ->
                Csi.ControllerGetVolumeHealthRequest.newBuilder().setVolumeId(f.id());
            case "ControllerListVolumeHealth" ->
                Csi.ControllerListVolumeHealthRequest.newBuilder()
                        .setMaxEntries(random.nextInt(4))
                        .setStartingToken(random.nextBoolean() ? healthToken : "");
            case "NodeGetVolumeHealth" ->
                Csi.NodeGetVolumeHealthRequest.newBuilder()
                        .setVolumeId(f.id())
                        .setVolumePublishPath(target)
                        .setStagingTargetPath(staging);
            case "NodeGetStorageHealth" -> Csi.NodeGetStorageHealthRequest.newBuilder();
            case "GroupControllerGetCapabilities" -> Csi.GroupControllerGetCapabilitiesRequest.newBuilder();
            case "CreateVolumeGroupSnapshot" -> {
                Fixture other = fixtures.get(random.nextInt(fixtures.size()));
                yield Csi.CreateVolumeGroupSnapshotRequest.newBuilder()
                        .setName("fuzz-group-" + random.nextInt(2))
                        .addSourceVolumeIds(f.id())
                        .addSourceVolumeIds(other.id());
            }
            case "DeleteVolumeGroupSnapshot" -> {
                Map.Entry<String, List<String>> group = group();
                yield Csi.DeleteVolumeGroupSnapshotRequest.newBuilder()
                        .setGroupSnapshotId(group.getKey())
                        .addAllSnapshotIds(group.getValue());
            }
            case "GetVolumeGroupSnapshot" -> {
                Map.Entry<String, List<String>> group = group();
                yield Csi.GetVolumeGroupSnapshotRequest.newBuilder()
                        .setGroupSnapshotId(group.getKey())
                        .addAllSnapshotIds(group.getValue());
            }
            case "GetMetadataAllocated" ->
                Csi.GetMetadataAllocatedRequest.newBuilder()
                        .setSnapshotId(snapshot())
                        .setStartingOffset(startingOffset())
                        .setMaxResults(maxResults());
            case "GetMetadataDelta" ->
                Csi.GetMetadataDeltaRequest.newBuilder()
                        .setBaseSnapshotId(snapshot())
                        .setTargetSnapshotId(snapshot())
                        .setStartingOffset(startingOffset())
                        .setMaxResults(maxResults());
            default -> throw new IllegalArgumentException("no template for " + method);
        };
    }

    /** An ephemeral inline volume, as kubelet publishes one: a handle, a target, and the volume_context. */
    private Message.Builder inline(int i, StringBuilder about) {
        about.setLength(0);
        about.append("inline volume ").append(i);
        return Csi.NodePublishVolumeRequest.newBuilder()
                .setVolumeId("csi-inline-" + i)
                .setTargetPath(tree.inlineTargets().get(i).toString())
                .setVolumeCapability(capability(false, Mode.SINGLE_NODE_WRITER))
                .putVolumeContext("csi.storage.k8s.io/ephemeral", "true")
                .putVolumeContext("size", "16Mi")
                .putVolumeContext("csi.storage.k8s.io/pod.name", "pod-inline-" + i);
    }

    private Csi.Topology topology() {
        return Csi.Topology.newBuilder()
                .putSegments("topology.blockpool.csi.dev/node", NODE_ID)
                .build();
    }

    /** A group snapshot the run created, with its members, or an unknown one. */
    private Map.Entry<String, List<String>> group() {
        return groups.isEmpty()
                ? Map.entry("group-" + "0".repeat(32), List.of("snap-" + "0".repeat(32)))
                : List.copyOf(groups.entrySet()).get(random.nextInt(groups.size()));
    }

    /**
     * An offset into a snapshot, at its edges, inside a block or beyond it: the driver answers OUT_OF_RANGE for the
     * last.
     */
    private long startingOffset() {
        return switch (random.nextInt(6)) {
            case 0 -> 0;
            case 1 -> random.nextLong(SIZE + 1);
            case 2 -> SIZE;
            case 3 -> SIZE + 1 + random.nextInt(4096);
            case 4 -> -1 - random.nextInt(4096);
            default -> random.nextBoolean() ? Long.MAX_VALUE : Long.MIN_VALUE;
        };
    }

    /** Tuples per message asked: the driver's choice (0), a few, the most an int holds, or a negative count. */
    private int maxResults() {
        return switch (random.nextInt(5)) {
            case 0 -> 0;
            case 1 -> 1 + random.nextInt(8);
            case 2 -> Integer.MAX_VALUE;
            case 3 -> -1 - random.nextInt(8);
            default -> Integer.MIN_VALUE;
        };
    }

    private String snapshot() {
        return snapshots.isEmpty() ? "snap-" + "0".repeat(32) : snapshots.get(random.nextInt(snapshots.size()));
    }

    /** A volume the run created and may lose: deleting or detaching the fixtures would end the deep part of the run. */
    String disposable() {
        return disposableVolumes.isEmpty()
                ? "vol-" + "0".repeat(32)
                : disposableVolumes.get(random.nextInt(disposableVolumes.size()));
    }

    /** Remembers what a successful answer created, removed, staged or published. */
    void record(String method, Message request, byte[] response) throws Exception {
        switch (request) {
            case Csi.CreateVolumeRequest r -> {
                String id =
                        Csi.CreateVolumeResponse.parseFrom(response).getVolume().getVolumeId();
                if (!isFixtureId(id) && !disposableVolumes.contains(id)) {
                    disposableVolumes.add(id);
                }
            }
            case Csi.DeleteVolumeRequest r -> disposableVolumes.remove(r.getVolumeId());
            case Csi.CreateSnapshotRequest r -> {
                String id = Csi.CreateSnapshotResponse.parseFrom(response)
                        .getSnapshot()
                        .getSnapshotId();
                if (!snapshots.contains(id)) {
                    snapshots.add(id);
                }
            }
            case Csi.DeleteSnapshotRequest r -> snapshots.remove(r.getSnapshotId());
            case Csi.CreateVolumeGroupSnapshotRequest r -> {
                Csi.VolumeGroupSnapshot group = Csi.CreateVolumeGroupSnapshotResponse.parseFrom(response)
                        .getGroupSnapshot();
                groups.put(
                        group.getGroupSnapshotId(),
                        group.getSnapshotsList().stream()
                                .map(Csi.Snapshot::getSnapshotId)
                                .toList());
            }
            case Csi.DeleteVolumeGroupSnapshotRequest r -> groups.remove(r.getGroupSnapshotId());
            case Csi.ControllerListVolumeHealthRequest r ->
                healthToken = Csi.ControllerListVolumeHealthResponse.parseFrom(response)
                        .getNextToken();
            case Csi.ListVolumesRequest r ->
                volumesToken = Csi.ListVolumesResponse.parseFrom(response).getNextToken();
            case Csi.ListSnapshotsRequest r ->
                snapshotsToken = Csi.ListSnapshotsResponse.parseFrom(response).getNextToken();
            case Csi.NodeStageVolumeRequest r -> staged.add(new Placement(r.getVolumeId(), r.getStagingTargetPath()));
            case Csi.NodeUnstageVolumeRequest r ->
                staged.remove(new Placement(r.getVolumeId(), r.getStagingTargetPath()));
            case Csi.NodePublishVolumeRequest r -> published.add(new Placement(r.getVolumeId(), r.getTargetPath()));
            case Csi.NodeUnpublishVolumeRequest r ->
                published.remove(new Placement(r.getVolumeId(), r.getTargetPath()));
            default -> {}
        }
    }
}
