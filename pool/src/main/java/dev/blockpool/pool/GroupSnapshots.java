package dev.blockpool.pool;

import dev.blockpool.common.Quoting;
import dev.blockpool.common.StorageException;
import dev.blockpool.pool.records.RecordStore;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Group snapshots: several volumes snapshotted by one call. Each member is an ordinary snapshot
 * (restored like any other) that names its group; the group's record in {@code groups/} is the
 * commit point, written once every member is, and removed before them. A crash in between
 * leaves members whose group has no record, which a retry of the same create takes up again
 * (member IDs follow from the group's name and the volume) or the reconcile removes.
 *
 * <p>The members are taken one after another, so each is crash-consistent on its own but they
 * are not of one instant: what a pod writes to one volume while another is being copied may be
 * in one member and not in the other. Callers serialise operations on one group ID, its member
 * IDs and its source volumes; this class does no locking of its own.
 */
public final class GroupSnapshots {

    private static final Logger log = LoggerFactory.getLogger(GroupSnapshots.class);

    private final RecordStore<GroupSnapshot> records;
    private final Snapshots snapshots;
    private final Volumes volumes;
    private final Clock clock;

    GroupSnapshots(Path directory, Snapshots snapshots, Volumes volumes, Clock clock) {
        this.records = new RecordStore<>(directory, RecordCodecs.GROUP_SNAPSHOT);
        this.snapshots = snapshots;
        this.volumes = volumes;
        this.clock = clock;
    }

    /** The group; empty when there is none or the ID could never have been issued. */
    public Optional<GroupSnapshot> find(String groupId) {
        return Ids.isGroupSnapshotId(groupId) ? records.read(groupId) : Optional.empty();
    }

    /** The snapshot ID the member of {@code volumeId} in the group named {@code name} has. */
    public static String memberIdFor(String name, String volumeId) {
        return Ids.snapshotIdFor(memberName(name, volumeId));
    }

    /**
     * Snapshots every volume of {@code volumeIds} under the group {@code name}, or returns the
     * group of that name when it was taken before of the same volumes (idempotent on the name).
     * {@code volumeIds} is not empty and names each volume once.
     */
    public GroupSnapshot create(String name, List<String> volumeIds) {
        String id = Ids.groupSnapshotIdFor(name);
        Optional<GroupSnapshot> existing = find(id);
        if (existing.isPresent()) {
            if (!Set.copyOf(existing.get().sourceVolumeIds()).equals(Set.copyOf(volumeIds))) {
                throw StorageException.conflict(
                        "group snapshot %s already exists of other volumes (%s)",
                        Quoting.quote(name), existing.get().sourceVolumeIds());
            }
            return existing.get();
        }
        List<Volume> sources = volumeIds.stream().map(volumes::get).toList(); // NOT_FOUND before any copy
        List<Snapshot> made = new ArrayList<>();
        try {
            List<String> memberIds = new ArrayList<>();
            for (Volume source : sources) {
                Snapshot member = snapshots.create(
                        memberName(name, source.id()), source, volumes.imagePath(source.id()), Optional.of(id));
                made.add(member);
                memberIds.add(member.id());
            }
            GroupSnapshot group = new GroupSnapshot(id, name, volumeIds, memberIds, clock.instant());
            records.write(id, group);
            log.info("created group snapshot {} ({}) of volumes {}", id, name, volumeIds);
            return group;
        } catch (RuntimeException failure) {
            // Without its record nobody will delete the members this attempt made.
            for (Snapshot member : made) {
                try {
                    snapshots.delete(member.id());
                } catch (RuntimeException cleanup) {
                    failure.addSuppressed(cleanup);
                }
            }
            throw failure;
        }
    }

    /**
     * Deletes the group and its members: its record first, so a crash in between leaves only
     * members of no group, which the reconcile removes. An unknown group is already deleted.
     */
    public void delete(String groupId, List<String> expectedSnapshotIds) {
        Optional<GroupSnapshot> group = find(groupId);
        if (group.isEmpty()) {
            return;
        }
        requireMembers(group.get(), expectedSnapshotIds);
        records.delete(groupId);
        group.get().snapshotIds().forEach(snapshots::delete);
        log.info(
                "deleted group snapshot {} and its {} snapshots",
                groupId,
                group.get().snapshotIds().size());
    }

    /** The group and its members; NOT_FOUND when there is none. */
    public GroupSnapshot get(String groupId, List<String> expectedSnapshotIds) {
        GroupSnapshot group = find(groupId)
                .orElseThrow(
                        () -> StorageException.notFound("group snapshot %s does not exist", Quoting.quote(groupId)));
        requireMembers(group, expectedSnapshotIds);
        return group;
    }

    /** The members of the group, as recorded. */
    public List<Snapshot> members(GroupSnapshot group) {
        return group.snapshotIds().stream()
                .map(id -> snapshots
                        .find(id)
                        .orElseThrow(() -> StorageException.internal(
                                "snapshot %s of group snapshot %s is missing", id, group.id())))
                .toList();
    }

    /** Refuses to delete a snapshot alone while its group exists. */
    void requireStandalone(Snapshot snapshot) {
        Optional<String> groupId = snapshot.groupSnapshotId();
        if (groupId.isPresent() && find(groupId.get()).isPresent()) {
            throw StorageException.invalid(
                    "snapshot %s is part of group snapshot %s: delete the group "
                            + "(DeleteVolumeGroupSnapshot), which deletes its snapshots",
                    snapshot.id(), groupId.get());
        }
    }

    /** The CO may send the member IDs it knows: a different set is a mismatch (the spec's INVALID_ARGUMENT). */
    private static void requireMembers(GroupSnapshot group, List<String> expected) {
        if (!expected.isEmpty() && !Set.copyOf(expected).equals(Set.copyOf(group.snapshotIds()))) {
            throw StorageException.invalid(
                    "snapshot_ids %s are not the snapshots of group snapshot %s (%s)",
                    expected, group.id(), group.snapshotIds());
        }
    }

    private static String memberName(String groupName, String volumeId) {
        return "group:" + groupName + "/" + volumeId;
    }
}
