package dev.blockpool.driver;

import static dev.blockpool.csi.StatusAssertions.failure;
import static org.assertj.core.api.Assertions.assertThat;

import csi.v1.Csi;
import csi.v1.Csi.VolumeCapability;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.csi.CsiRequests;
import io.grpc.Status;
import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * On a node-local pool nothing is attached, so DeleteVolume learns from this node's loop devices
 * and mounts that a volume is still staged or published here: FAILED_PRECONDITION, with its image
 * and record left as they are, until it is unstaged; its snapshots, restores and clones are
 * made and deleted as ever meanwhile.
 */
@NeedsRoot
class DeleteStagedVolumeRealHostTest {

    private static final long MIB = 1L << 20;
    private static final String NODE = "in-use-node";
    private static final VolumeCapability EXT4 = CsiRequests.mount("ext4", Mode.SINGLE_NODE_WRITER);
    private static final VolumeCapability BLOCK = CsiRequests.block(Mode.SINGLE_NODE_WRITER);

    @AutoClose
    private NodeLocalDriver driver;

    @BeforeEach
    void start() throws IOException {
        driver = NodeLocalDriver.start("blockpool-in-use-", NODE);
    }

    @Test
    void aStagedAndPublishedVolumeIsDeletedOnlyOnceUnstaged() throws IOException {
        String volumeId = create("pvc-staged", EXT4, null);
        Path staging = driver.stage(volumeId, EXT4);
        Path target = driver.publish(volumeId, EXT4, "pod-a");

        assertThat(refusedDelete(volumeId))
                .contains(volumeId, "in use on node " + NODE, "/dev/loop", staging.toString(), target.toString())
                .contains("once it is unstaged");

        // A snapshot, a restore and a clone of it are the pool's alone: they come and go meanwhile.
        String snapshotId = driver.controller()
                .createSnapshot(Csi.CreateSnapshotRequest.newBuilder()
                        .setName("snap-staged")
                        .setSourceVolumeId(volumeId)
                        .build())
                .getSnapshot()
                .getSnapshotId();
        delete(create(
                "pvc-restored",
                EXT4,
                Csi.VolumeContentSource.newBuilder()
                        .setSnapshot(Csi.VolumeContentSource.SnapshotSource.newBuilder()
                                .setSnapshotId(snapshotId))
                        .build()));
        delete(create(
                "pvc-cloned",
                EXT4,
                Csi.VolumeContentSource.newBuilder()
                        .setVolume(Csi.VolumeContentSource.VolumeSource.newBuilder()
                                .setVolumeId(volumeId))
                        .build()));
        driver.controller()
                .deleteSnapshot(Csi.DeleteSnapshotRequest.newBuilder()
                        .setSnapshotId(snapshotId)
                        .build());

        driver.node()
                .nodeUnpublishVolume(Csi.NodeUnpublishVolumeRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .setTargetPath(target.toString())
                        .build());
        assertThat(refusedDelete(volumeId))
                .as("still staged")
                .contains(staging.toString())
                .doesNotContain(target.toString());

        unstageThenDelete(volumeId);
        delete(volumeId); // a volume already gone is deleted
    }

    /** A raw block volume is staged by its loop device alone, mounted nowhere: in use all the same. */
    @Test
    void aStagedRawBlockVolumeIsDeletedOnlyOnceUnstaged() throws IOException {
        String volumeId = create("pvc-block", BLOCK, null);
        driver.stage(volumeId, BLOCK);

        assertThat(refusedDelete(volumeId)).contains(volumeId, "/dev/loop", "mounted nowhere");

        unstageThenDelete(volumeId);
    }

    /** DeleteVolume's FAILED_PRECONDITION message, the volume's image and record asserted untouched. */
    private String refusedDelete(String volumeId) {
        String message = failure(() -> delete(volumeId), Status.Code.FAILED_PRECONDITION)
                .getStatus()
                .getDescription();
        assertThat(image(volumeId)).isRegularFile();
        assertThat(record(volumeId)).isRegularFile();
        return message;
    }

    /** Unstaged, the volume is deleted: its image and its record are gone. */
    private void unstageThenDelete(String volumeId) {
        driver.unstage(volumeId);
        delete(volumeId);
        assertThat(image(volumeId)).doesNotExist();
        assertThat(record(volumeId)).doesNotExist();
    }

    private String create(String name, VolumeCapability capability, Csi.VolumeContentSource source) {
        var request = CsiRequests.createVolume(name, 64 * MIB, capability);
        if (source != null) {
            request.setVolumeContentSource(source);
        }
        return driver.controller().createVolume(request.build()).getVolume().getVolumeId();
    }

    private void delete(String volumeId) {
        driver.controller()
                .deleteVolume(Csi.DeleteVolumeRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .build());
    }

    private Path image(String volumeId) {
        return driver.pool().resolve("volumes/" + volumeId + ".img");
    }

    private Path record(String volumeId) {
        return driver.pool().resolve("volumes/" + volumeId + ".json");
    }
}
