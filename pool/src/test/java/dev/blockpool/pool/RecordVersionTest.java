package dev.blockpool.pool;

import static dev.blockpool.pool.Attachment.Access.READ_ONLY;
import static dev.blockpool.pool.Attachment.Access.READ_WRITE;
import static dev.blockpool.pool.Attachment.Sharing.MULTI_NODE;
import static dev.blockpool.pool.Attachment.Sharing.SINGLE_NODE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.blockpool.common.OperationLocks;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.common.StorageException;
import dev.blockpool.common.StorageException.Kind;
import dev.blockpool.pool.records.RecordFormat;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every record on disk carries its format version; older files read as before, newer ones are refused. */
class RecordVersionTest {

    @TempDir
    Path root;

    private Pool open() {
        return Pool.open(root, new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO);
    }

    private static VolumeSpec spec(String name) {
        return VolumeSpecs.sparse(name, 1 << 20);
    }

    @Test
    void recordsWrittenBeforeFormatVersionsReadAsBefore() throws IOException {
        Pool pool = open();
        String volumeId = Ids.volumeIdFor("pvc");
        String snapshotId = Ids.snapshotIdFor("snap");
        String sourceId = Ids.volumeIdFor("src");
        // Exactly what the driver wrote before records carried a format version.
        Path volumeFile = write("volumes/" + volumeId + ".json", """
                {
                  "id" : "%s",
                  "name" : "pvc",
                  "capacityBytes" : 2097152,
                  "fsType" : "xfs",
                  "allocation" : "PREALLOCATED",
                  "accessTypes" : [ "BLOCK", "MOUNT" ],
                  "parameters" : {
                    "allocation" : "preallocated"
                  },
                  "source" : {
                    "kind" : "SNAPSHOT",
                    "id" : "%s"
                  },
                  "createdAt" : "2026-11-23T19:20:12.108788244Z",
                  "attachments" : [ {
                    "nodeId" : "node-1",
                    "readonly" : true,
                    "multiNode" : true
                  } ]
                }""".formatted(volumeId, snapshotId));
        Files.write(root.resolve("volumes/" + volumeId + ".img"), new byte[2 << 20]);
        Path snapshotFile = write("snapshots/" + snapshotId + ".json", """
                {
                  "id" : "%s",
                  "name" : "snap",
                  "sourceVolumeId" : "%s",
                  "sizeBytes" : 1048576,
                  "createdAt" : "2026-11-23T19:20:12.041780182Z"
                }""".formatted(snapshotId, sourceId));
        Path nodeFile = write("nodes/node-1.json", """
                {
                  "nodeId" : "node-1",
                  "maxVolumesPerNode" : 8,
                  "topology" : {
                    "topology.blockpool.csi.dev/node" : "node-1"
                  }
                }""");
        String volumeText = Files.readString(volumeFile);

        Volume expected = new Volume(
                volumeId,
                "pvc",
                2 << 20,
                "xfs",
                Allocation.PREALLOCATED,
                Set.of(AccessType.BLOCK, AccessType.MOUNT),
                Map.of("allocation", "preallocated"),
                Optional.of(ContentSource.snapshot(snapshotId)),
                Instant.parse("2026-11-23T19:20:12.108788244Z"),
                List.of(new Attachment("node-1", READ_ONLY, MULTI_NODE)));
        assertThat(pool.volumes().get(volumeId)).isEqualTo(expected);
        assertThat(pool.volumes().list()).containsExactly(expected);
        assertThat(pool.snapshots().find(snapshotId))
                .contains(new Snapshot(
                        snapshotId, "snap", sourceId, 1 << 20, Instant.parse("2026-11-23T19:20:12.041780182Z")));
        assertThat(pool.nodes().find("node-1"))
                .contains(new NodeRecord("node-1", 8, Map.of("topology.blockpool.csi.dev/node", "node-1")));
        assertThat(volumeFile).as("reading never rewrites").hasContent(volumeText);

        // the next change of an old record writes it in the current format
        pool.attachments().detach(volumeId, Optional.of("node-1"));
        assertThat(formatVersion(volumeFile)).isEqualTo(1);
        assertThat(pool.volumes().get(volumeId)).isEqualTo(expected.withAttachments(List.of()));
        assertThat(formatVersion(snapshotFile)).as("untouched").isNull();
        assertThat(formatVersion(nodeFile)).as("untouched").isNull();
    }

    @Test
    void everyRecordIsWrittenWithItsFormatVersion() throws IOException {
        Pool pool = open();
        pool.nodes().register(new NodeRecord("node-1", 8, Map.of()));
        Volume volume = pool.volumes().create(spec("pvc"));
        Snapshot snapshot =
                pool.snapshots().create("snap", volume, pool.volumes().imagePath(volume.id()));
        pool.attachments().attach(volume.id(), "node-1", READ_WRITE, SINGLE_NODE);

        for (String file : List.of(
                "nodes/node-1.json", "volumes/" + volume.id() + ".json", "snapshots/" + snapshot.id() + ".json")) {
            assertThat(formatVersion(root.resolve(file))).as(file).isEqualTo(1);
        }
    }

    /** A driver of format 1 would let a member be deleted alone: it must refuse the member instead. */
    @Test
    void aGroupMemberIsWrittenInTheFormatThatOlderDriversRefuse() throws IOException {
        Pool pool = open();
        Volume volume = pool.volumes().create(spec("pvc"));
        Snapshot alone = pool.snapshots().create("alone", volume, pool.volumes().imagePath(volume.id()));
        GroupSnapshot group = pool.groups().create("group", List.of(volume.id()));
        Snapshot member = pool.groups().members(group).getFirst();

        assertThat(formatVersion(root.resolve("snapshots/" + member.id() + ".json")))
                .isEqualTo(2);
        assertThat(formatVersion(root.resolve("snapshots/" + alone.id() + ".json")))
                .isEqualTo(1);
        assertThat(formatVersion(root.resolve("groups/" + group.id() + ".json")))
                .isEqualTo(1);
        assertThat(open().snapshots().find(member.id())).contains(member);
    }

    @Test
    void aRecordFromANewerDriverIsRefusedAndLeftAsItIs() throws IOException {
        Pool pool = open();
        pool.nodes().register(new NodeRecord("node-1", 8, Map.of()));
        pool.nodes().register(new NodeRecord("node-2", 8, Map.of()));
        Volume volume = pool.volumes().create(spec("future"));
        Volume current = pool.volumes().create(spec("current"));
        Snapshot snapshot =
                pool.snapshots().create("future-snap", volume, pool.volumes().imagePath(volume.id()));
        Path volumeFile = root.resolve("volumes/" + volume.id() + ".json");
        Path snapshotFile = root.resolve("snapshots/" + snapshot.id() + ".json");
        Path nodeFile = root.resolve("nodes/node-2.json");
        Map<Path, byte[]> before = new HashMap<>();
        for (Path file : List.of(volumeFile, snapshotFile, nodeFile)) {
            rewriteHead(file, "\"formatVersion\" : " + (RecordFormat.VERSION + 1) + ", \"encryption\" : \"aes-xts\"");
            age(file);
            before.put(file, Files.readAllBytes(file));
        }
        Path image = pool.volumes().imagePath(volume.id());
        Path snapshotImage = pool.snapshots().imagePath(snapshot.id());
        age(image);
        age(snapshotImage);

        assertRefused(volumeFile, () -> pool.volumes().get(volume.id()));
        assertRefused(volumeFile, () -> pool.volumes().create(spec("future")));
        assertRefused(volumeFile, () -> pool.volumes().expand(volume.id(), 2 << 20));
        assertRefused(volumeFile, () -> pool.attachments().attach(volume.id(), "node-1", READ_WRITE, SINGLE_NODE));
        assertRefused(volumeFile, () -> pool.attachments().detach(volume.id(), Optional.empty()));
        assertRefused(volumeFile, () -> pool.volumes().delete(volume.id()));
        assertRefused(snapshotFile, () -> pool.snapshots().find(snapshot.id()));
        assertRefused(snapshotFile, () -> pool.snapshots().create("future-snap", volume, image));
        assertRefused(snapshotFile, () -> pool.snapshots().delete(snapshot.id()));
        assertRefused(
                snapshotFile,
                () -> pool.volumes()
                        .create(new VolumeSpec(
                                "restore",
                                1 << 20,
                                "ext4",
                                Allocation.SPARSE,
                                Set.of(AccessType.MOUNT),
                                Map.of(),
                                Optional.of(ContentSource.snapshot(snapshot.id())))));
        assertRefused(nodeFile, () -> pool.nodes().register(new NodeRecord("node-2", 8, Map.of())));
        assertRefused(nodeFile, () -> pool.attachments().attach(current.id(), "node-2", READ_WRITE, SINGLE_NODE));

        // listings leave them out instead of failing, and the reconcile keeps their images
        assertThat(pool.volumes().list()).containsExactly(current);
        assertThat(pool.snapshots().list()).isEmpty();
        open().reconcile(new OperationLocks());

        for (Map.Entry<Path, byte[]> file : before.entrySet()) {
            assertThat(file.getKey()).as("left as it is").hasBinaryContent(file.getValue());
        }
        assertThat(image).exists().hasSize(1 << 20);
        assertThat(snapshotImage).exists().hasSize(1 << 20);
    }

    @Test
    void aFormatVersionThatIsNoVersionIsADamagedRecord() throws IOException {
        Pool pool = open();
        Volume volume = pool.volumes().create(spec("odd"));
        Path file = root.resolve("volumes/" + volume.id() + ".json");
        rewriteHead(file, "\"formatVersion\" : \"two\"");

        assertThatThrownBy(() -> pool.volumes().get(volume.id())).isInstanceOfSatisfying(StorageException.class, e -> {
            assertThat(e.kind()).isEqualTo(Kind.INTERNAL);
            assertThat(e.getMessage()).contains(file.toString(), "formatVersion");
        });
    }

    private static void assertRefused(Path file, Runnable call) {
        assertThatThrownBy(call::run).isInstanceOfSatisfying(StorageException.class, e -> {
            assertThat(e.kind()).as(e.getMessage()).isEqualTo(Kind.PRECONDITION);
            assertThat(e.getMessage()).contains(file.toString(), "newer blockpool", "upgrade");
        });
    }

    private static Integer formatVersion(Path file) throws IOException {
        try (JsonParser in = new JsonFactory().createParser(file.toFile())) {
            in.nextToken();
            while (in.nextToken() == JsonToken.FIELD_NAME) {
                String field = in.currentName();
                in.nextToken();
                if (field.equals("formatVersion")) {
                    return in.getIntValue();
                }
                in.skipChildren();
            }
            return null;
        }
    }

    /** The driver's file with {@code head}, fields in JSON, in place of its format version. */
    private static void rewriteHead(Path file, String head) throws IOException {
        String written = Files.readString(file);
        String version = "{\n  \"formatVersion\" : 1,";
        assertThat(written).startsWith(version);
        Files.writeString(file, "{ " + head + "," + written.substring(version.length()));
    }

    private Path write(String file, String content) throws IOException {
        return Files.writeString(root.resolve(file), content);
    }

    private static void age(Path file) throws IOException {
        Files.setLastModifiedTime(file, FileTime.from(Instant.now().minus(Duration.ofHours(1))));
    }
}
