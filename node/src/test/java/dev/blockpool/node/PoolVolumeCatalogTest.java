package dev.blockpool.node;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.csi.CsiKeys;
import dev.blockpool.csi.PoolScope;
import dev.blockpool.pool.AccessType;
import dev.blockpool.pool.Allocation;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.Volume;
import dev.blockpool.pool.VolumeSpec;
import dev.blockpool.pool.VolumeSpecs;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Which pool volumes the node treats as ephemeral inline volumes, i.e. deletes at NodeUnpublish. */
class PoolVolumeCatalogTest {

    @TempDir
    Path dir;

    private Pool pool;
    private PoolVolumeCatalog catalog;

    @BeforeEach
    void setUp() {
        pool = Pool.open(dir.resolve("pool"), new ProcessCommandRunner(), Clock.systemUTC(), Duration.ofHours(1));
        catalog = new PoolVolumeCatalog(pool);
    }

    @Test
    void aVolumeFoundByItsIdIsNeverEphemeralWhateverItsParametersSay() {
        Volume persistent = pool.volumes()
                .create(new VolumeSpec(
                        "pvc-1",
                        1 << 20,
                        "ext4",
                        Allocation.SPARSE,
                        Set.of(AccessType.MOUNT),
                        Map.of(CsiKeys.EPHEMERAL, "true"),
                        Optional.empty()));
        assertThat(catalog.find(persistent.id()))
                .get()
                .extracting(NodeVolume::ephemeral)
                .isEqualTo(false);
    }

    @Test
    void onlyKubeletsHandleFindsTheEphemeralVolumeCreatedForIt() {
        NodeVolume created = catalog.createEphemeral("csi-0123abcd", 1 << 20, "ext4");
        assertThat(created.ephemeral()).isTrue();
        assertThat(catalog.find("csi-0123abcd")).get().satisfies(v -> {
            assertThat(v.id()).isEqualTo(created.id());
            assertThat(v.ephemeral()).isTrue();
        });
        assertThat(catalog.find(created.id()))
                .get()
                .extracting(NodeVolume::ephemeral)
                .isEqualTo(false);
        assertThat(catalog.isVolumeId(created.id())).isTrue();
        assertThat(catalog.isVolumeId("csi-0123abcd")).isFalse();
        assertThat(catalog.find("csi-other")).isEmpty();
        // the node's calls on the handle lock what the controller's on the volume do
        assertThat(catalog.lockKey("csi-0123abcd")).isEqualTo(created.id());
        assertThat(catalog.lockKey(created.id())).isEqualTo(created.id());
    }

    @Test
    void aVolumeNamedLikeAnEphemeralOneIsNotEphemeralWithoutTheMarker() {
        pool.volumes().create(VolumeSpecs.sparse(PoolVolumeCatalog.EPHEMERAL_NAME_PREFIX + "csi-feed", 1 << 20));
        assertThat(catalog.find("csi-feed")).isEmpty();
    }

    @Test
    void onANodeLocalPoolTheNodeGrowsTheImageOnASharedOneTheControllerDoes() {
        Volume volume = pool.volumes().create(VolumeSpecs.sparse("pvc-grow", 1 << 20));
        NodeVolume onNode = catalog.find(volume.id()).orElseThrow();

        catalog.growImage(onNode, 4 << 20);
        assertThat(pool.volumes().get(volume.id()).capacityBytes()).isEqualTo(1 << 20);

        new PoolVolumeCatalog(pool, PoolScope.nodeLocal("node-a")).growImage(onNode, 4 << 20);
        assertThat(pool.volumes().get(volume.id()).capacityBytes()).isEqualTo(4 << 20);
        assertThat(pool.volumes().imagePath(volume.id())).hasSize(4 << 20);
    }
}
