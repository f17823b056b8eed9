package dev.blockpool.pool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.Quoting;
import dev.blockpool.common.StorageException;
import dev.blockpool.common.StorageException.Kind;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

class IdsTest {

    /** IDs a hostile or broken client could send; none of them may ever be taken for one of ours. */
    static Stream<String> hostileIds() {
        String valid = Ids.volumeIdFor("pvc-1");
        return Stream.of(
                "",
                ".",
                "..",
                "../x",
                "x/..",
                "/",
                "a/b",
                "/etc/passwd",
                "../../etc/passwd",
                "../volumes/" + valid,
                "./" + valid,
                valid + "/..",
                valid + "/../" + valid,
                "/" + valid,
                valid + "\0",
                "\0" + valid,
                "vol-\0",
                "\0",
                valid.replace('a', '/'),
                valid + ".json",
                valid + ".img",
                valid.toUpperCase(),
                " " + valid,
                valid + "\n",
                "vol-" + "0".repeat(31),
                "vol-" + "0".repeat(33),
                "vol-" + "0".repeat(200),
                "a".repeat(200),
                "../".repeat(70));
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "pvc-8f1c2e2a-5d0b-4c1e-9a57-1a6f3e0c2b11",
                "../../etc/passwd",
                "a/b",
                "with\0nul",
                "",
                "ünïcödé name",
                "x"
            })
    void derivedIdsMatchTheirPatternWhateverTheName(String name) {
        assertThat(Ids.volumeIdFor(name)).matches("vol-[0-9a-f]{32}").satisfies(id -> {
            assertThat(Ids.isVolumeId(id)).isTrue();
            assertThat(Ids.isSnapshotId(id)).isFalse();
        });
        assertThat(Ids.snapshotIdFor(name)).matches("snap-[0-9a-f]{32}").satisfies(id -> {
            assertThat(Ids.isSnapshotId(id)).isTrue();
            assertThat(Ids.isVolumeId(id)).isFalse();
        });
    }

    @Test
    void derivedIdsAreStableAndDistinct() {
        assertThat(Ids.volumeIdFor("a")).isEqualTo(Ids.volumeIdFor("a")).isNotEqualTo(Ids.volumeIdFor("b"));
        assertThat(Ids.snapshotIdFor("a")).isEqualTo(Ids.snapshotIdFor("a")).isNotEqualTo(Ids.snapshotIdFor("b"));
    }

    @ParameterizedTest
    @MethodSource("hostileIds")
    void hostileIdsAreNeverVolumeSnapshotOrNodeIds(String id) {
        assertThat(Ids.isVolumeId(id)).as("volume id %s", Quoting.quote(id)).isFalse();
        assertThat(Ids.isSnapshotId(id)).as("snapshot id %s", Quoting.quote(id)).isFalse();
        if (id.contains("/") || id.contains("\0") || id.startsWith(".") || id.length() > 128 || id.isEmpty()) {
            assertThat(Ids.isNodeId(id)).as("node id %s", Quoting.quote(id)).isFalse();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"..", "../x", "a/b", "/etc/passwd", "node\0", ".hidden", "-flag", "a b", ""})
    void nodeIdsWithPathOrShellCharactersAreRefused(String id) {
        assertThat(Ids.isNodeId(id)).isFalse();
        assertThatThrownBy(() -> Ids.requireNodeId(id))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(Kind.INVALID));
    }

    @ParameterizedTest
    @ValueSource(strings = {"node-1", "worker-2.example.com", "ip-10-0-0-1_eu", "N"})
    void hostNamesAreNodeIds(String id) {
        assertThat(Ids.isNodeId(id)).isTrue();
        assertThat(Ids.requireNodeId(id)).isEqualTo(id);
    }

    @Test
    void nodeIdsAreAtMost128Bytes() {
        assertThat(Ids.isNodeId("n".repeat(128))).isTrue();
        assertThat(Ids.isNodeId("n".repeat(129))).isFalse();
    }
}
