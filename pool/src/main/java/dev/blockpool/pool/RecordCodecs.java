package dev.blockpool.pool;

import static dev.blockpool.pool.records.ValueCodec.BOOLEAN;
import static dev.blockpool.pool.records.ValueCodec.INSTANT;
import static dev.blockpool.pool.records.ValueCodec.LONG;
import static dev.blockpool.pool.records.ValueCodec.STRING;
import static dev.blockpool.pool.records.ValueCodec.enumOf;
import static dev.blockpool.pool.records.ValueCodec.listOf;
import static dev.blockpool.pool.records.ValueCodec.mapOf;
import static dev.blockpool.pool.records.ValueCodec.setOf;

import dev.blockpool.common.IoLimits;
import dev.blockpool.pool.records.RecordCodec;
import dev.blockpool.pool.records.RecordCodec.Field;
import dev.blockpool.pool.records.RecordFormat;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Every record's fields on disk, each named here once, in the order they are written: the names,
 * order and shapes Jackson databind gave them from the records' components when it wrote them,
 * so that drivers before and after these codecs read each other's records.
 */
public final class RecordCodecs {

    /** What a volume was made from, as its record and a transfer's records write it. */
    public static final RecordCodec<ContentSource> CONTENT_SOURCE = ContentSourceFields.CODEC;

    /** A volume's record, as volumes/<id>.json and a move over the peer channel carry it. */
    public static final RecordCodec<Volume> VOLUME = VolumeFields.CODEC;

    static final RecordCodec<Snapshot> SNAPSHOT = SnapshotFields.CODEC;
    static final RecordCodec<GroupSnapshot> GROUP_SNAPSHOT = GroupSnapshotFields.CODEC;
    static final RecordCodec<NodeRecord> NODE = NodeFields.CODEC;

    private RecordCodecs() {}

    private static final class VolumeFields {
        static final Field<Volume, String> ID = Field.required("id", Volume::id, STRING);
        static final Field<Volume, String> NAME = Field.required("name", Volume::name, STRING);
        static final Field<Volume, Long> CAPACITY = Field.required("capacityBytes", Volume::capacityBytes, LONG);
        static final Field<Volume, String> FS_TYPE = Field.required("fsType", Volume::fsType, STRING);
        static final Field<Volume, Allocation> ALLOCATION =
                Field.required("allocation", Volume::allocation, enumOf(Allocation.class));
        static final Field<Volume, Set<AccessType>> ACCESS_TYPES =
                Field.required("accessTypes", Volume::accessTypes, setOf(enumOf(AccessType.class)));
        static final Field<Volume, Map<String, String>> PARAMETERS =
                Field.required("parameters", Volume::parameters, mapOf(STRING));
        static final Field<Volume, Optional<ContentSource>> SOURCE =
                Field.optional("source", Volume::source, ContentSourceFields.CODEC);
        static final Field<Volume, Instant> CREATED_AT = Field.required("createdAt", Volume::createdAt, INSTANT);
        static final Field<Volume, List<Attachment>> ATTACHMENTS =
                Field.required("attachments", Volume::attachments, listOf(AttachmentFields.CODEC));
        /**
         * Written only when the volume has a limit, so a record without one is the bytes it always
         * was. A driver from before limits reads the record and ignores them (the volume is not
         * throttled there); one that changes the record then drops them.
         */
        static final Field<Volume, IoLimits> IO_LIMITS =
                Field.omittedWhen("ioLimits", Volume::ioLimits, IoLimitsFields.CODEC, IoLimits.NONE);

        static final RecordCodec<Volume> CODEC = new RecordCodec<>(
                List.of(
                        ID,
                        NAME,
                        CAPACITY,
                        FS_TYPE,
                        ALLOCATION,
                        ACCESS_TYPES,
                        PARAMETERS,
                        SOURCE,
                        CREATED_AT,
                        ATTACHMENTS,
                        IO_LIMITS),
                values -> new Volume(
                        values.get(ID),
                        values.get(NAME),
                        values.get(CAPACITY),
                        values.get(FS_TYPE),
                        values.get(ALLOCATION),
                        values.get(ACCESS_TYPES),
                        values.get(PARAMETERS),
                        values.get(SOURCE),
                        values.get(CREATED_AT),
                        values.get(ATTACHMENTS),
                        values.get(IO_LIMITS)));
    }

    private static final class IoLimitsFields {
        static final Field<IoLimits, Long> READ_IOPS = Field.required("readIops", IoLimits::readIops, LONG);
        static final Field<IoLimits, Long> WRITE_IOPS = Field.required("writeIops", IoLimits::writeIops, LONG);
        static final Field<IoLimits, Long> READ_BPS =
                Field.required("readBytesPerSecond", IoLimits::readBytesPerSecond, LONG);
        static final Field<IoLimits, Long> WRITE_BPS =
                Field.required("writeBytesPerSecond", IoLimits::writeBytesPerSecond, LONG);

        static final RecordCodec<IoLimits> CODEC = new RecordCodec<>(
                List.of(READ_IOPS, WRITE_IOPS, READ_BPS, WRITE_BPS),
                values -> new IoLimits(
                        values.get(READ_IOPS), values.get(WRITE_IOPS), values.get(READ_BPS), values.get(WRITE_BPS)));
    }

    private static final class ContentSourceFields {
        static final Field<ContentSource, ContentSource.Kind> KIND =
                Field.required("kind", ContentSource::kind, enumOf(ContentSource.Kind.class));
        static final Field<ContentSource, String> ID = Field.required("id", ContentSource::id, STRING);

        static final RecordCodec<ContentSource> CODEC =
                new RecordCodec<>(List.of(KIND, ID), values -> new ContentSource(values.get(KIND), values.get(ID)));
    }

    private static final class AttachmentFields {
        static final Field<Attachment, String> NODE_ID = Field.required("nodeId", Attachment::nodeId, STRING);
        static final Field<Attachment, Boolean> READONLY = Field.required("readonly", Attachment::readonly, BOOLEAN);
        /** An attachment of a driver before multi-node publishing was single-node. */
        static final Field<Attachment, Boolean> MULTI_NODE =
                Field.since("multiNode", Attachment::multiNode, BOOLEAN, false);

        static final RecordCodec<Attachment> CODEC = new RecordCodec<>(
                List.of(NODE_ID, READONLY, MULTI_NODE),
                values -> new Attachment(
                        values.get(NODE_ID),
                        values.get(READONLY) ? Attachment.Access.READ_ONLY : Attachment.Access.READ_WRITE,
                        values.get(MULTI_NODE) ? Attachment.Sharing.MULTI_NODE : Attachment.Sharing.SINGLE_NODE));
    }

    private static final class SnapshotFields {
        static final Field<Snapshot, String> ID = Field.required("id", Snapshot::id, STRING);
        static final Field<Snapshot, String> NAME = Field.required("name", Snapshot::name, STRING);
        static final Field<Snapshot, String> SOURCE_VOLUME_ID =
                Field.required("sourceVolumeId", Snapshot::sourceVolumeId, STRING);
        static final Field<Snapshot, Long> SIZE = Field.required("sizeBytes", Snapshot::sizeBytes, LONG);
        static final Field<Snapshot, Instant> CREATED_AT = Field.required("createdAt", Snapshot::createdAt, INSTANT);
        /** Written null for a snapshot of no group, and absent from those of a driver before groups. */
        static final Field<Snapshot, Optional<String>> GROUP_SNAPSHOT_ID =
                Field.optional("groupSnapshotId", Snapshot::groupSnapshotId, STRING);

        static final RecordCodec<Snapshot> CODEC = new RecordCodec<>(
                List.of(ID, NAME, SOURCE_VOLUME_ID, SIZE, CREATED_AT, GROUP_SNAPSHOT_ID),
                values -> new Snapshot(
                        values.get(ID),
                        values.get(NAME),
                        values.get(SOURCE_VOLUME_ID),
                        values.get(SIZE),
                        values.get(CREATED_AT),
                        values.get(GROUP_SNAPSHOT_ID)),
                // a member of a group: a driver before groups would let it be deleted alone
                snapshot ->
                        snapshot.groupSnapshotId().isPresent() ? RecordFormat.GROUP_MEMBER : RecordFormat.UNVERSIONED);
    }

    private static final class GroupSnapshotFields {
        static final Field<GroupSnapshot, String> ID = Field.required("id", GroupSnapshot::id, STRING);
        static final Field<GroupSnapshot, String> NAME = Field.required("name", GroupSnapshot::name, STRING);
        static final Field<GroupSnapshot, List<String>> SOURCE_VOLUME_IDS =
                Field.required("sourceVolumeIds", GroupSnapshot::sourceVolumeIds, listOf(STRING));
        static final Field<GroupSnapshot, List<String>> SNAPSHOT_IDS =
                Field.required("snapshotIds", GroupSnapshot::snapshotIds, listOf(STRING));
        static final Field<GroupSnapshot, Instant> CREATED_AT =
                Field.required("createdAt", GroupSnapshot::createdAt, INSTANT);

        static final RecordCodec<GroupSnapshot> CODEC = new RecordCodec<>(
                List.of(ID, NAME, SOURCE_VOLUME_IDS, SNAPSHOT_IDS, CREATED_AT),
                values -> new GroupSnapshot(
                        values.get(ID),
                        values.get(NAME),
                        values.get(SOURCE_VOLUME_IDS),
                        values.get(SNAPSHOT_IDS),
                        values.get(CREATED_AT)));
    }

    private static final class NodeFields {
        static final Field<NodeRecord, String> NODE_ID = Field.required("nodeId", NodeRecord::nodeId, STRING);
        static final Field<NodeRecord, Long> MAX_VOLUMES =
                Field.required("maxVolumesPerNode", NodeRecord::maxVolumesPerNode, LONG);
        static final Field<NodeRecord, Map<String, String>> TOPOLOGY =
                Field.required("topology", NodeRecord::topology, mapOf(STRING));

        static final RecordCodec<NodeRecord> CODEC = new RecordCodec<>(
                List.of(NODE_ID, MAX_VOLUMES, TOPOLOGY),
                values -> new NodeRecord(values.get(NODE_ID), values.get(MAX_VOLUMES), values.get(TOPOLOGY)));
    }
}
