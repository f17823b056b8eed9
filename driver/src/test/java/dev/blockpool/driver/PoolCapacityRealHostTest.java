package dev.blockpool.driver;

import static dev.blockpool.csi.StatusAssertions.failure;
import static org.assertj.core.api.Assertions.assertThat;

import csi.v1.Csi;
import csi.v1.Csi.VolumeCapability;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.csi.CsiRequests;
import dev.blockpool.pool.CapacityPolicy;
import io.grpc.Status;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;

/**
 * An operator's node-local pool of 300 MiB (ext4 on a loop device of the test's own), used only
 * through the driver's calls: the pool promises what its policy allows and no more, GetCapacity
 * says exactly what can still be made, and when an over-committed pool is filled by one tenant
 * its health warns while there is room, and the other tenant's filesystem comes out clean.
 */
@NeedsRoot
class PoolCapacityRealHostTest {

    private static final long MIB = 1L << 20;
    private static final long POOL_BYTES = 300 * MIB;
    private static final String NODE = "capacity-node";
    private static final VolumeCapability EXT4 = CsiRequests.mount("ext4", Mode.SINGLE_NODE_WRITER);

    @AutoClose
    private NodeLocalDriver driver;

    @Test
    void withoutOverCommitASecondVolumeIsRefusedAndCapacityIsWhatCanBeMade() throws IOException {
        driver = NodeLocalDriver.start("blockpool-capacity-", NODE, CapacityPolicy.DEFAULT, POOL_BYTES);
        long empty = capacity();

        create("first", 200 * MIB);
        long left = capacity();
        assertThat(left).isLessThan(100 * MIB).isLessThan(empty);

        assertThat(failure(() -> create("second", 200 * MIB), Status.Code.RESOURCE_EXHAUSTED)
                        .getStatus()
                        .getDescription())
                .contains("cannot promise", "no over-commit");
        assertThat(imagesInPool()).hasSize(1);

        // What GetCapacity answers can be made, exactly; then nothing more.
        create("rest", left);
        assertThat(capacity()).isZero();
        failure(() -> create("one-more", MIB), Status.Code.RESOURCE_EXHAUSTED);
        assertThat(imagesInPool()).hasSize(2);
    }

    @Test
    void overCommittedTheThirdIsRefusedAndFillingOneVolumeLeavesTheOthersFilesystemClean() throws IOException {
        driver = NodeLocalDriver.start(
                "blockpool-capacity-",
                NODE,
                new CapacityPolicy(2.0, CapacityPolicy.Amount.parse("1%"), CapacityPolicy.Amount.parse("10%")),
                POOL_BYTES);
        long empty = capacity();
        String first = create("first", 200 * MIB);
        assertThat(capacity()).isEqualTo(empty - 200 * MIB);
        String second = create("second", 200 * MIB);
        assertThat(capacity()).isEqualTo(empty - 400 * MIB).isLessThan(200 * MIB);
        assertThat(failure(() -> create("third", 200 * MIB), Status.Code.RESOURCE_EXHAUSTED)
                        .getStatus()
                        .getDescription())
                .contains("over-commit ratio 2.0");
        String bystander = create("bystander", 100 * MIB);

        Path firstTarget = publish(first);
        Path secondTarget = publish(second);
        Path bystanderTarget = publish(bystander);
        write(bystanderTarget.resolve("tenant-data"), (byte) 'b', 8);
        // One tenant fills its volume, then another writes until the pool is full; the bystander's
        // health is watched all the while.
        write(firstTarget.resolve("fill"), (byte) 'f', 170);
        long freeWhenWarned = -1;
        byte[] data = new byte[(int) MIB];
        Arrays.fill(data, (byte) 's');
        try (FileChannel channel = FileChannel.open(
                secondTarget.resolve("fill"), StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            for (int chunk = 0; chunk < 190; chunk++) {
                if (freeWhenWarned < 0 && reasons(bystander).contains("PoolNearlyFull")) {
                    freeWhenWarned = poolFreeBytes();
                }
                channel.write(ByteBuffer.wrap(data));
                channel.force(false);
            }
        } catch (IOException full) {
            // the pool is full: this tenant's writes into new blocks fail
        }
        assertThat(poolFreeBytes()).as("the pool filled").isLessThan(MIB);
        assertThat(freeWhenWarned).as("free bytes when the health first warned").isGreaterThan(8 * MIB);

        for (String volume : List.of(first, second, bystander)) {
            unpublishAndUnstage(volume);
        }
        CommandRunner.Result check = NodeLocalDriver.RUNNER.run(
                "e2fsck",
                "-fn",
                driver.pool().resolve("volumes/" + bystander + ".img").toString());
        assertThat(check.exitCode()).as(check.stdout() + check.stderr()).isZero();
    }

    private long capacity() {
        Csi.GetCapacityResponse response = driver.controller().getCapacity(Csi.GetCapacityRequest.getDefaultInstance());
        assertThat(response.getMaximumVolumeSize().getValue()).isEqualTo(response.getAvailableCapacity());
        return response.getAvailableCapacity();
    }

    private String create(String name, long bytes) {
        return driver.createVolume(name, bytes, EXT4);
    }

    private List<Path> imagesInPool() throws IOException {
        try (var images = Files.list(driver.pool().resolve("volumes"))) {
            return images.filter(p -> p.toString().endsWith(".img")).toList();
        }
    }

    /** Staged and published as kubelet does it, for a pod named after the volume; the pod's target path. */
    private Path publish(String volumeId) throws IOException {
        driver.stage(volumeId, EXT4);
        return driver.publish(volumeId, EXT4, volumeId);
    }

    private void unpublishAndUnstage(String volumeId) {
        driver.node()
                .nodeUnpublishVolume(Csi.NodeUnpublishVolumeRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .setTargetPath(target(volumeId).toString())
                        .build());
        driver.unstage(volumeId);
    }

    private Path target(String volumeId) {
        return driver.dir().resolve("kubelet/pods/" + volumeId + "/mount");
    }

    private List<String> reasons(String volumeId) {
        return driver
                .node()
                .nodeGetVolumeHealth(Csi.NodeGetVolumeHealthRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .build())
                .getVolumeHealth()
                .getHealthStatusesList()
                .stream()
                .map(Csi.VolumeHealth.VolumeHealthEntry::getReason)
                .toList();
    }

    private long poolFreeBytes() throws IOException {
        return Files.getFileStore(driver.pool()).getUsableSpace();
    }

    /** Writes {@code mebibytes} of {@code fill} into a new file, and flushes it. */
    private static void write(Path file, byte fill, int mebibytes) throws IOException {
        byte[] chunk = new byte[(int) MIB];
        Arrays.fill(chunk, fill);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            for (int i = 0; i < mebibytes; i++) {
                channel.write(ByteBuffer.wrap(chunk));
            }
            channel.force(true);
        }
    }
}
