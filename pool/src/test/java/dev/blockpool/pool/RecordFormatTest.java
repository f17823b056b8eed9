package dev.blockpool.pool;

import static dev.blockpool.pool.Attachment.Access.READ_ONLY;
import static dev.blockpool.pool.Attachment.Access.READ_WRITE;
import static dev.blockpool.pool.Attachment.Sharing.MULTI_NODE;
import static dev.blockpool.pool.Attachment.Sharing.SINGLE_NODE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.IoLimits;
import dev.blockpool.common.StorageException;
import dev.blockpool.common.StorageException.Kind;
import dev.blockpool.pool.records.RecordCodec;
import dev.blockpool.pool.records.RecordFormat;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Records as they are on disk. The files in {@code records/} were written by the driver of commit
 * 5133a5a (Jackson databind): every driver since must read them, and write the same bytes for the
 * same record, so that an older driver reads what a newer one wrote. Its sets and maps came in
 * the order of Set.copyOf and Map.copyOf, which changes from JVM to JVM; they are written sorted now.
 */
class RecordFormatTest {

    private static final Path FILE = Path.of("/pool/volumes/pvc-11.json");

    static final Volume EVERY_FIELD = new Volume(
            "pvc-0a1b2c3d",
            "pvc-data",
            2147483648L,
            "xfs",
            Allocation.PREALLOCATED,
            Set.of(AccessType.MOUNT, AccessType.BLOCK),
            Map.of("allocation", "preallocated", "fsType", "xfs"),
            Optional.of(ContentSource.snapshot("snap-9f8e")),
            Instant.parse("2026-11-24T10:12:00.123456789Z"),
            List.of(new Attachment("node-1", READ_ONLY, MULTI_NODE), new Attachment("node-2", READ_WRITE, MULTI_NODE)));
    static final Volume CLONE = new Volume(
            "pvc-11",
            "pvc-one",
            1048576L,
            "ext4",
            Allocation.SPARSE,
            Set.of(AccessType.BLOCK),
            Map.of("csi.storage.k8s.io/pvc/name", "data-0"),
            Optional.of(ContentSource.volume("pvc-22")),
            Instant.parse("2026-11-24T10:12:00.120Z"),
            List.of(new Attachment("node-1", READ_WRITE, SINGLE_NODE)));
    static final Volume WITHOUT_SOURCE = new Volume(
            "pvc-33",
            "pvc-empty",
            1048576L,
            "ext4",
            Allocation.SPARSE,
            Set.of(),
            Map.of(),
            Optional.empty(),
            Instant.parse("2026-11-24T10:12:00Z"),
            List.of());
    static final Snapshot SNAPSHOT =
            new Snapshot("snap-1", "snap", "pvc-11", 1048576L, Instant.parse("2026-11-24T10:12:00.000001Z"));
    static final Snapshot GROUP_MEMBER = new Snapshot(
            "snap-2", "member", "pvc-11", 1048576L, Instant.parse("2026-11-24T10:12:00.5Z"), Optional.of("group-1"));
    static final GroupSnapshot GROUP = new GroupSnapshot(
            "group-1",
            "grp",
            List.of("pvc-11", "pvc-22"),
            List.of("snap-2", "snap-3"),
            Instant.parse("2026-11-24T10:12:01.987654321Z"));
    static final NodeRecord NODE = new NodeRecord("node-1", 8, Map.of("topology.blockpool.csi.dev/node", "node-1"));
    static final NodeRecord UNORDERED_TOPOLOGY = new NodeRecord("node-3", 3, Map.of("a", "1", "b", "2", "c", "3"));
    static final NodeRecord ESCAPES =
            new NodeRecord("nöde-\u2603\"\\\n\t\u0001", Long.MAX_VALUE, Map.of("k\u00e9y", "v/</script>"));

    /** Files whose every set and map holds at most one element: their writer's order was fixed. */
    static Stream<Arguments> writtenInOneOrder() {
        return Stream.of(
                Arguments.of("volume-clone.json", CLONE),
                Arguments.of("volume-without-source.json", WITHOUT_SOURCE),
                Arguments.of("snapshot.json", SNAPSHOT),
                Arguments.of("snapshot-group-member.json", GROUP_MEMBER),
                Arguments.of("group-snapshot.json", GROUP),
                Arguments.of("node.json", NODE),
                Arguments.of("node-escapes.json", ESCAPES));
    }

    /** Every file, with sets and maps of several elements too, in whatever order Set.copyOf and Map.copyOf gave. */
    static Stream<Arguments> everyFile() {
        return Stream.concat(
                writtenInOneOrder(),
                Stream.of(
                        Arguments.of("volume-every-field.json", EVERY_FIELD),
                        Arguments.of("node-unordered-topology.json", UNORDERED_TOPOLOGY)));
    }

    @ParameterizedTest
    @MethodSource("everyFile")
    void aRecordWrittenBeforeReadsAsItWas(String file, Object record) {
        assertThat(decode(fixture(file), record.getClass())).isEqualTo(record);
    }

    @ParameterizedTest
    @MethodSource("writtenInOneOrder")
    void aRecordIsWrittenAsBefore(String file, Object record) {
        assertThat(encode(record)).isEqualTo(fixture(file));
    }

    static Stream<Object> records() {
        return Stream.of(
                EVERY_FIELD,
                CLONE,
                WITHOUT_SOURCE,
                new Volume(
                        "pvc-44",
                        "",
                        0,
                        "",
                        Allocation.SPARSE,
                        Set.of(AccessType.MOUNT, AccessType.BLOCK),
                        Map.of("", "", "b", "2", "a", "1"),
                        Optional.of(ContentSource.volume("")),
                        Instant.parse("+10000-01-01T00:00:00Z"),
                        List.of(
                                new Attachment("", READ_WRITE, SINGLE_NODE),
                                new Attachment("node-2", READ_ONLY, SINGLE_NODE),
                                new Attachment("node-3", READ_WRITE, MULTI_NODE))),
                SNAPSHOT,
                GROUP_MEMBER,
                new Snapshot("snap-3", "s", "pvc-1", Long.MIN_VALUE, Instant.EPOCH.minusNanos(1)),
                GROUP,
                new GroupSnapshot("group-2", "g", List.of(), List.of(), Instant.parse("2026-11-24T10:12:01Z")),
                NODE,
                UNORDERED_TOPOLOGY,
                ESCAPES,
                new NodeRecord("node-4", 1, Map.of()),
                CLONE.withIoLimits(new IoLimits(200, 100, 50L << 20, Long.MAX_VALUE)));
    }

    @ParameterizedTest
    @MethodSource("records")
    void aRecordReadsBackAsWritten(Object record) {
        String written = encode(record);
        Object read = decode(written, record.getClass());

        assertThat(read).isEqualTo(record);
        assertThat(encode(read)).isEqualTo(written);
    }

    @Test
    void setsAndMapsAreWrittenSorted() {
        assertThat(encode(EVERY_FIELD))
                .as("MOUNT before BLOCK, as the enum declares them")
                .isEqualTo(fixture("volume-every-field.json"));
        assertThat(encode(UNORDERED_TOPOLOGY))
                .isEqualTo(fixture("node-unordered-topology.json").replace("""
                                    "a" : "1",
                                    "c" : "3",
                                    "b" : "2"
                                """, """
                                    "a" : "1",
                                    "b" : "2",
                                    "c" : "3"
                                """));
    }

    /** What records of older drivers lack, or hold as null, reads as before. */
    @Test
    void fieldsOlderRecordsLackReadAsBefore() {
        String snapshot = fixture("snapshot.json");
        assertThat(decode(snapshot.replace(",\n  \"groupSnapshotId\" : null", ""), Snapshot.class))
                .as("a snapshot from before group snapshots")
                .isEqualTo(SNAPSHOT);
        String volume = fixture("volume-clone.json");
        assertThat(decode(volume.replace(",\n    \"multiNode\" : false", ""), Volume.class))
                .as("an attachment from before multi-node ones")
                .isEqualTo(CLONE);
        assertThat(decode(volume.replace("\"multiNode\" : false", "\"multiNode\" : null"), Volume.class))
                .isEqualTo(CLONE);
        assertThat(decode(volume.replace("\"formatVersion\" : 1,\n", ""), Volume.class))
                .as("from before format versions")
                .isEqualTo(CLONE);
        String withoutSource = volume.substring(0, volume.indexOf("  \"source\"")) + "  \"source\" : null,\n"
                + volume.substring(volume.indexOf("  \"createdAt\""));
        assertThat(decode(withoutSource, Volume.class).source()).isEmpty();
    }

    /** A newer driver's fields, which an older one may ignore; a field given twice counts with its last value. */
    @Test
    void fieldsTheRecordDoesNotHaveAreSkipped() {
        String volume = fixture("volume-clone.json");
        String newer = volume.replace(
                        "\"name\" : \"pvc-one\",", "\"name\" : \"pvc-one\",\n  \"encryption\" : { \"key\" : null },")
                .replace("\"id\" : \"pvc-22\"", "\"id\" : \"pvc-22\",\n    \"at\" : [ { \"x\" : [ ] }, 1 ]");
        String twice = volume.replace("\"name\" : \"pvc-one\",", "\"name\" : \"pvc-one\",\n  \"name\" : \"again\",");

        assertThat(decode(newer, Volume.class)).isEqualTo(CLONE);
        assertThat(decode(twice, Volume.class).name()).isEqualTo("again");
    }

    /** Each required field, by the key that names it at its depth in the file. */
    static Stream<Arguments> requiredFields() {
        return Stream.of(
                Arguments.of("volume-clone.json", "  \"id\"", "id"),
                Arguments.of("volume-clone.json", "  \"name\"", "name"),
                Arguments.of("volume-clone.json", "  \"capacityBytes\"", "capacityBytes"),
                Arguments.of("volume-clone.json", "  \"fsType\"", "fsType"),
                Arguments.of("volume-clone.json", "  \"allocation\"", "allocation"),
                Arguments.of("volume-clone.json", "  \"accessTypes\"", "accessTypes"),
                Arguments.of("volume-clone.json", "  \"parameters\"", "parameters"),
                Arguments.of("volume-clone.json", "    \"kind\"", "source.kind"),
                Arguments.of("volume-clone.json", "    \"id\"", "source.id"),
                Arguments.of("volume-clone.json", "  \"createdAt\"", "createdAt"),
                Arguments.of("volume-clone.json", "  \"attachments\"", "attachments"),
                Arguments.of("volume-clone.json", "    \"nodeId\"", "attachments[0].nodeId"),
                Arguments.of("volume-clone.json", "    \"readonly\"", "attachments[0].readonly"),
                Arguments.of("snapshot.json", "  \"id\"", "id"),
                Arguments.of("snapshot.json", "  \"name\"", "name"),
                Arguments.of("snapshot.json", "  \"sourceVolumeId\"", "sourceVolumeId"),
                Arguments.of("snapshot.json", "  \"sizeBytes\"", "sizeBytes"),
                Arguments.of("snapshot.json", "  \"createdAt\"", "createdAt"),
                Arguments.of("group-snapshot.json", "  \"id\"", "id"),
                Arguments.of("group-snapshot.json", "  \"name\"", "name"),
                Arguments.of("group-snapshot.json", "  \"sourceVolumeIds\"", "sourceVolumeIds"),
                Arguments.of("group-snapshot.json", "  \"snapshotIds\"", "snapshotIds"),
                Arguments.of("group-snapshot.json", "  \"createdAt\"", "createdAt"),
                Arguments.of("node.json", "  \"nodeId\"", "nodeId"),
                Arguments.of("node.json", "  \"maxVolumesPerNode\"", "maxVolumesPerNode"),
                Arguments.of("node.json", "  \"topology\"", "topology"));
    }

    @ParameterizedTest
    @MethodSource("requiredFields")
    void aMissingRequiredFieldIsNamedByItsPath(String file, String key, String field) {
        String content = fixture(file);
        assertThat(content).contains("\n" + key + " : ");

        assertDamaged(
                content.replace("\n" + key + " : ", "\n" + key.replaceFirst("\"", "\"was-") + " : "),
                typeOf(file),
                "field " + field + " is missing or invalid");
    }

    static Stream<Arguments> invalidValues() {
        return Stream.of(
                Arguments.of("\"capacityBytes\" : 1048576", "\"capacityBytes\" : true", "capacityBytes"),
                Arguments.of(
                        "\"capacityBytes\" : 1048576", "\"capacityBytes\" : 99999999999999999999", "capacityBytes"),
                Arguments.of("\"id\" : \"pvc-11\"", "\"id\" : [ \"pvc-11\" ]", "id"),
                Arguments.of("\"SPARSE\"", "\"sparse\"", "allocation"),
                Arguments.of("[ \"BLOCK\" ]", "[ \"BLOCK\", \"FILE\" ]", "accessTypes[1]"),
                Arguments.of("[ \"BLOCK\" ]", "\"BLOCK\"", "accessTypes"),
                Arguments.of("\"data-0\"", "[ ]", "parameters.csi.storage.k8s.io/pvc/name"),
                Arguments.of("\"VOLUME\"", "\"CLONE\"", "source.kind"),
                Arguments.of("\"source\" : {", "\"source\" : 5, \"was\" : {", "source"),
                Arguments.of("\"2026-11-24T10:12:00.120Z\"", "\"yesterday\"", "createdAt"),
                Arguments.of("\"readonly\" : false", "\"readonly\" : \"no\"", "attachments[0].readonly"));
    }

    /** Values the databind reader took by coercion or as null, which no driver wrote. */
    static Stream<Arguments> valuesNoDriverWrote() {
        return Stream.of(
                Arguments.of("\"id\" : \"pvc-11\"", "\"id\" : 11", "id"),
                Arguments.of("\"id\" : \"pvc-11\"", "\"id\" : null", "id"),
                Arguments.of("\"capacityBytes\" : 1048576", "\"capacityBytes\" : \"1048576\"", "capacityBytes"),
                Arguments.of("\"capacityBytes\" : 1048576", "\"capacityBytes\" : 1048576.0", "capacityBytes"),
                Arguments.of("\"capacityBytes\" : 1048576", "\"capacityBytes\" : null", "capacityBytes"),
                Arguments.of("\"SPARSE\"", "0", "allocation"),
                Arguments.of("[ \"BLOCK\" ]", "[ null ]", "accessTypes[0]"),
                Arguments.of("[ \"BLOCK\" ]", "null", "accessTypes"),
                Arguments.of("\"data-0\"", "null", "parameters.csi.storage.k8s.io/pvc/name"),
                Arguments.of("\"data-0\"", "0", "parameters.csi.storage.k8s.io/pvc/name"),
                Arguments.of("\"pvc-22\"", "22", "source.id"),
                Arguments.of("\"2026-11-24T10:12:00.120Z\"", "1764000000", "createdAt"),
                Arguments.of("\"2026-11-24T10:12:00.120Z\"", "\"\"", "createdAt"),
                Arguments.of("\"node-1\"", "1", "attachments[0].nodeId"),
                Arguments.of("\"readonly\" : false", "\"readonly\" : \"false\"", "attachments[0].readonly"),
                Arguments.of("\"readonly\" : false", "\"readonly\" : 0", "attachments[0].readonly"),
                Arguments.of("\"multiNode\" : false", "\"multiNode\" : \"false\"", "attachments[0].multiNode"),
                Arguments.of("[ {", "[ null, {", "attachments[0]"));
    }

    @ParameterizedTest
    @MethodSource({"invalidValues", "valuesNoDriverWrote"})
    void anInvalidValueIsNamedByItsPath(String valid, String invalid, String field) {
        String content = fixture("volume-clone.json");
        assertThat(content).contains(valid);

        assertDamaged(content.replace(valid, invalid), Volume.class, "field " + field + " is missing or invalid");
    }

    @Test
    void anInvalidValueOfAnyRecordIsNamedByItsPath() {
        String snapshot = fixture("snapshot-group-member.json");
        assertDamaged(
                snapshot.replace("\"group-1\"", "1"), Snapshot.class, "field groupSnapshotId is missing or invalid");
        String group = fixture("group-snapshot.json");
        assertDamaged(
                group.replace("\"snap-3\"", "null"), GroupSnapshot.class, "field snapshotIds[1] is missing or invalid");
        assertDamaged(
                group.replace("\"pvc-22\"", "{ }"),
                GroupSnapshot.class,
                "field sourceVolumeIds[1] is missing or invalid");
        String node = fixture("node.json");
        assertDamaged(
                node.replace(": 8,", ": -9223372036854775809,"),
                NodeRecord.class,
                "field maxVolumesPerNode is missing or invalid");
        assertDamaged(
                node.replace("\"node-1\"\n", "[ ]\n"),
                NodeRecord.class,
                "field topology.topology.blockpool.csi.dev/node is missing or invalid");
    }

    /** A volume's limits are written after its other fields; a volume without them is written as before limits. */
    @Test
    void ioLimitsAreWrittenOnlyWhenSet() {
        Volume limited = CLONE.withIoLimits(new IoLimits(200, 0, 0, 52428800));
        String written = encode(limited);
        String withoutLimits = fixture("volume-clone.json");

        assertThat(written)
                .isEqualTo(withoutLimits.substring(0, withoutLimits.lastIndexOf("\n}"))
                        + ",\n  \"ioLimits\" : {\n    \"readIops\" : 200,\n    \"writeIops\" : 0,\n"
                        + "    \"readBytesPerSecond\" : 0,\n    \"writeBytesPerSecond\" : 52428800\n  }\n}");
        assertThat(encode(limited.withIoLimits(IoLimits.NONE))).isEqualTo(withoutLimits);
        assertThat(decode(withoutLimits, Volume.class).ioLimits()).isEqualTo(IoLimits.NONE);
    }

    @Test
    void anInvalidIoLimitIsNamedByItsPath() {
        String written = encode(CLONE.withIoLimits(new IoLimits(200, 0, 0, 0)));

        assertDamaged(
                written.replace("\"writeIops\" : 0", "\"writeIops\" : \"0\""),
                Volume.class,
                "field ioLimits.writeIops is missing or invalid");
        assertDamaged(
                written.replace("\"readIops\" : 200", "\"readIops\" : -200"),
                Volume.class,
                "field ioLimits is missing or invalid");
    }

    static Stream<Arguments> notJson() {
        return Stream.of(
                Arguments.of("", "it is empty"),
                Arguments.of(" \n ", "it is empty"),
                Arguments.of("[ ]", "it holds no JSON object"),
                Arguments.of("null", "it holds no JSON object"),
                Arguments.of("{\n  \"id\" : \"pvc-11\" \"name\"", "it is not valid JSON (line 2, column 19)"),
                Arguments.of(
                        "{\n  \"formatVersion\" : 1,\n  \"id\" : \"pvc-", "it is not valid JSON (line 3, column 15)"));
    }

    @ParameterizedTest
    @MethodSource("notJson")
    void aFileThatIsNoRecordSaysHow(String content, String why) {
        assertDamaged(content, Volume.class, why);
    }

    static Stream<Arguments> noVersions() {
        return Stream.of(
                Arguments.of("\"two\"", "\"two\""),
                Arguments.of("0", "0"),
                Arguments.of("-1", "-1"),
                Arguments.of("2.50", "2.5"),
                Arguments.of("1e2", "100.0"),
                Arguments.of("null", "null"),
                Arguments.of("{ \"major\" : [ 1, \"x\" ] }", "{\"major\":[1,\"x\"]}"));
    }

    @ParameterizedTest
    @MethodSource("noVersions")
    void aFormatVersionThatIsNoVersionIsQuoted(String version, String quoted) {
        assertDamaged(
                volumeOfFormat(version), Volume.class, "its formatVersion " + quoted + " is not a format version");
    }

    @ParameterizedTest
    @ValueSource(strings = {"3", "99999999999999999999999"})
    void aNewerFormatIsRefusedWithItsNumber(String version) {
        assertThatThrownBy(() -> decode(volumeOfFormat(version), Volume.class))
                .isInstanceOfSatisfying(StorageException.class, e -> {
                    assertThat(e.kind()).isEqualTo(Kind.PRECONDITION);
                    assertThat(e.getMessage())
                            .isEqualTo("record " + FILE + " was written by a newer blockpool "
                                    + "(record format " + version
                                    + "; this driver reads formats 1 to 2): upgrade the driver; "
                                    + "the file is left as it is");
                });
    }

    @Test
    void aRecordWithoutAValueIsNotWritten() {
        Volume unnamed = new Volume(
                CLONE.id(),
                null,
                CLONE.capacityBytes(),
                CLONE.fsType(),
                CLONE.allocation(),
                CLONE.accessTypes(),
                CLONE.parameters(),
                CLONE.source(),
                CLONE.createdAt(),
                CLONE.attachments());
        Volume attachedToNoNode = CLONE.withAttachments(
                List.of(CLONE.attachments().getFirst(), new Attachment(null, READ_WRITE, SINGLE_NODE)));

        assertThatThrownBy(() -> encode(unnamed))
                .hasMessage("cannot encode the record for %s: %s", FILE, "field name has no value");
        assertThatThrownBy(() -> encode(attachedToNoNode))
                .hasMessage("cannot encode the record for %s: %s", FILE, "field attachments[1].nodeId has no value");
    }

    /** The codec of the records stored as {@code type}. */
    @SuppressWarnings("unchecked") // each type's own codec
    private static <T> RecordCodec<T> codecOf(Class<T> type) {
        return (RecordCodec<T>) Map.of(
                        Volume.class, RecordCodecs.VOLUME,
                        Snapshot.class, RecordCodecs.SNAPSHOT,
                        GroupSnapshot.class, RecordCodecs.GROUP_SNAPSHOT,
                        NodeRecord.class, RecordCodecs.NODE)
                .get(type);
    }

    private static <T> T decode(String content, Class<T> type) {
        return RecordFormat.decode(FILE, content.getBytes(StandardCharsets.UTF_8), codecOf(type));
    }

    private static Class<?> typeOf(String file) {
        return file.startsWith("volume")
                ? Volume.class
                : file.startsWith("snapshot")
                        ? Snapshot.class
                        : file.startsWith("group") ? GroupSnapshot.class : NodeRecord.class;
    }

    static void assertDamaged(String content, Class<?> type, String why) {
        assertThatThrownBy(() -> decode(content, type)).isInstanceOfSatisfying(StorageException.class, e -> {
            assertThat(e.kind()).isEqualTo(Kind.INTERNAL);
            assertThat(e.getMessage())
                    .isEqualTo("record " + FILE + " cannot be read: " + why + "; the pool needs an operator's look");
        });
    }

    /** The volume of volume-clone.json with {@code version}, in JSON, as its format version. */
    private static String volumeOfFormat(String version) {
        return fixture("volume-clone.json").replace("\"formatVersion\" : 1", "\"formatVersion\" : " + version);
    }

    private static <T> String encode(T record) {
        @SuppressWarnings("unchecked") // a record's class is the type it is stored as
        Class<T> type = (Class<T>) record.getClass();
        return new String(RecordFormat.encode(FILE, record, codecOf(type)), StandardCharsets.UTF_8);
    }

    static String fixture(String file) {
        try (InputStream in = RecordFormatTest.class.getResourceAsStream("/records/" + file)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
