package dev.blockpool.driver;

import static org.assertj.core.api.Assertions.assertThat;

import csi.v1.ControllerGrpc;
import csi.v1.Csi;
import csi.v1.NodeGrpc;
import dev.blockpool.csi.CsiRequests;
import dev.blockpool.csi.PoolScope;
import dev.blockpool.node.GroupMemberFreeze;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a group snapshot left marked frozen, as the drivers of a node-local pool find it: only
 * the holder of the node's claim takes the marks, never a second process on the pool while the
 * first may be freezing, and a mark whose file system the holder cannot see is kept and told in
 * the volume's health. The real freezes are {@link GroupSnapshotFreezeRealHostTest}'s.
 */
class FrozenLeftoversTest {

    private static final Duration GRACE = Duration.ofSeconds(10);

    @TempDir
    Path dir;

    @Test
    void onlyTheNodesHolderTakesTheMarksAndTellsOneItCannotSee() throws Exception {
        try (DriversOnOnePool drivers = new DriversOnOnePool(dir)) {
            Driver.Running first = drivers.start("first", "node-1", Mode.ALL, PoolScope.Kind.NODE);
            String volume = ControllerGrpc.newBlockingStub(drivers.channel("first"))
                    .createVolume(CsiRequests.createVolume(
                                    "pvc-left",
                                    1 << 20,
                                    CsiRequests.mount(Csi.VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
                            .build())
                    .getVolume()
                    .getVolumeId();
            // a mark of a freeze, whose file system is mounted where this process does not see it
            first.pool().freezeMarks().mark(volume);

            Driver.Running second = drivers.start("second", "node-1", Mode.ALL, PoolScope.Kind.NODE);
            GroupMemberFreeze secondFreeze =
                    (GroupMemberFreeze) second.opening().served().orElseThrow().freeze();
            secondFreeze.look();

            assertThat(secondFreeze.frozenCount())
                    .as("the node's marks are its holder's")
                    .isZero();
            assertThat(second.pool().freezeMarks().marked()).containsExactly(volume);

            first.stop(GRACE);
            secondFreeze.look(); // the node's claim is free: taken, and its marks with it

            assertThat(second.pool().freezeMarks().marked())
                    .as("not seen, so not taken for thawed")
                    .containsExactly(volume);
            assertThat(secondFreeze.frozenCount()).isEqualTo(1);
            assertThat(NodeGrpc.newBlockingStub(drivers.channel("second"))
                            .nodeGetVolumeHealth(Csi.NodeGetVolumeHealthRequest.newBuilder()
                                    .setVolumeId(volume)
                                    .build())
                            .getVolumeHealth()
                            .getHealthStatusesList())
                    .anySatisfy(status -> {
                        assertThat(status.getReason()).isEqualTo("FileSystemFrozen");
                        assertThat(status.getMessage()).contains("no file system mounted from it is seen");
                    });
        }
    }
}
