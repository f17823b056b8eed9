package dev.blockpool.pool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.StorageException;
import dev.blockpool.common.StorageException.Kind;
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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Records as they are on disk. The files in {@code records/} were written by the driver of commit
 * 5133a5a (Jackson databind): every driver since must read them, and write the same bytes for the
 * same record, so that an older driver reads what a newer one wrote.
 */
class RecordFormatTest {

    private static final Path FILE = Path.of("/pool/volumes/pvc-11.json");

    static final Volume EVERY_FIELD = new Volume("pvc-0a1b2c3d", "pvc-data", 2147483648L, "xfs",
            Allocation.PREALLOCATED, Set.of(AccessType.MOUNT, AccessType.BLOCK),
            Map.of("allocation", "preallocated", "fsType", "xfs"), Optional.of(ContentSource.snapshot("snap-9f8e")),
            Instant.parse("2026-11-24T10:12:00.123456789Z"),
            List.of(new Attachment("node-1", true, true), new Attachment("node-2", false, true)));
    static final Volume CLONE = new Volume("pvc-11", "pvc-one", 1048576L, "ext4", Allocation.SPARSE,
            Set.of(AccessType.BLOCK), Map.of("csi.storage.k8s.io/pvc/name", "data-0"),
            Optional.of(ContentSource.volume("pvc-22")), Instant.parse("2026-11-24T10:12:00.120Z"),
            List.of(new Attachment("node-1", false, false)));
    static final Volume WITHOUT_SOURCE = new Volume("pvc-33", "pvc-empty", 1048576L, "ext4", Allocation.SPARSE,
            Set.of(), Map.of(), Optional.empty(), Instant.parse("2026-11-24T10:12:00Z"), List.of());
    static final Snapshot SNAPSHOT = new Snapshot("snap-1", "snap", "pvc-11", 1048576L,
            Instant.parse("2026-11-24T10:12:00.000001Z"));
    static final Snapshot GROUP_MEMBER = new Snapshot("snap-2", "member", "pvc-11", 1048576L,
            Instant.parse("2026-11-24T10:12:00.5Z"), Optional.of("group-1"));
    static final GroupSnapshot GROUP = new GroupSnapshot("group-1", "grp", List.of("pvc-11", "pvc-22"),
            List.of("snap-2", "snap-3"), Instant.parse("2026-11-24T10:12:01.987654321Z"));
    static final NodeRecord NODE = new NodeRecord("node-1", 8, Map.of("topology.blockpool.csi.dev/node", "node-1"));
    static final NodeRecord UNORDERED_TOPOLOGY = new NodeRecord("node-3", 3, Map.of("a", "1", "b", "2", "c", "3"));
    static final NodeRecord ESCAPES = new NodeRecord("nöde-\u2603\"\\\n\t\u0001", Long.MAX_VALUE,
            Map.of("k\u00e9y", "v/</script>"));

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
        return Stream.concat(writtenInOneOrder(), Stream.of(
                Arguments.of("volume-every-field.json", EVERY_FIELD),
                Arguments.of("node-unordered-topology.json", UNORDERED_TOPOLOGY)));
    }

    @ParameterizedTest
    @MethodSource("everyFile")
    void aRecordWrittenBeforeReadsAsItWas(String file, Object record) {
        assertThat(RecordFormat.decode(FILE, fixture(file), record.getClass())).isEqualTo(record);
    }

    @ParameterizedTest
    @MethodSource("writtenInOneOrder")
    void aRecordIsWrittenAsBefore(String file, Object record) {
        assertThat(new String(RecordFormat.encode(FILE, record), StandardCharsets.UTF_8))
                .isEqualTo(new String(fixture(file), StandardCharsets.UTF_8));
    }

    static Stream<Arguments> invalidValues() {
        return Stream.of(
                Arguments.of("\"capacityBytes\" : 1048576", "\"capacityBytes\" : true", "capacityBytes"),
                Arguments.of("\"capacityBytes\" : 1048576", "\"capacityBytes\" : 99999999999999999999",
                        "capacityBytes"),
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

    @ParameterizedTest
    @MethodSource("invalidValues")
    void anInvalidValueIsNamedByItsPath(String valid, String invalid, String field) {
        String content = new String(fixture("volume-clone.json"), StandardCharsets.UTF_8);
        assertThat(content).contains(valid);

        assertDamaged(content.replace(valid, invalid), Volume.class, "field " + field + " is missing or invalid");
    }

    static void assertDamaged(String content, Class<?> type, String why) {
        assertThatThrownBy(() -> RecordFormat.decode(FILE, content.getBytes(StandardCharsets.UTF_8), type))
                .isInstanceOfSatisfying(StorageException.class, e -> {
                    assertThat(e.kind()).isEqualTo(Kind.INTERNAL);
                    assertThat(e.getMessage()).isEqualTo("metadata " + FILE + " cannot be read: " + why
                            + "; the pool needs an operator's look");
                });
    }

    static byte[] fixture(String file) {
        try (InputStream in = RecordFormatTest.class.getResourceAsStream("/records/" + file)) {
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
