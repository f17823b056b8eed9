package dev.blockpool.node;

import static dev.blockpool.csi.StatusAssertions.assertCode;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import csi.v1.Csi;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import csi.v1.NodeGrpc;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.common.SilentFuseMount;
import dev.blockpool.csi.CsiRequests;
import dev.blockpool.host.loops.LoopDevice;
import dev.blockpool.pool.AccessType;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.Volume;
import io.grpc.Status;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Each condition the node's health calls report, caused for real on this host: a filesystem the
 * kernel recorded errors in, an xfs shut down, an image unlinked while in use, a pool that does
 * not answer, and a pool that is full or read-only.
 */
@NeedsRoot
class VolumeHealthRealHostTest {

    private static final long MiB = NodeScratch.MiB;

    @RegisterExtension
    final NodeScratch scratch =
            new NodeScratch("blockpool-health-it-", "losetup", "blkid", "mkfs.ext4", "mkfs.xfs", "e2fsck", "xfs_io");

    private Path dir;
    private Path staging;
    private Pool pool;

    private NodeGrpc.NodeBlockingStub node;

    @BeforeEach
    void setUp() {
        dir = scratch.dir();
        staging = scratch.staging();
    }

    /** Opens the pool, once what a test puts under its directory is there. */
    private Pool openPool() {
        pool = scratch.pool();
        return pool;
    }

    /** The test's node plugin, one process for the whole test as a real one is (it learns what it attaches). */
    private NodeGrpc.NodeBlockingStub node() {
        if (node == null) {
            node = scratch.serve();
        }
        return node;
    }

    private Volume stagedVolume(String fsType) {
        Volume volume = scratch.volume("health-" + fsType, 320 * MiB, fsType, AccessType.MOUNT);
        stage(volume);
        return volume;
    }

    private void stage(Volume volume) {
        scratch.stage(node(), volume, CsiRequests.mount(volume.fsType(), Mode.SINGLE_NODE_WRITER));
    }

    private void unstage(Volume volume) {
        scratch.unstage(node(), volume);
    }

    private List<Csi.VolumeHealth.VolumeHealthEntry> health(String volumeId, Path... paths) {
        var request = Csi.NodeGetVolumeHealthRequest.newBuilder().setVolumeId(volumeId);
        if (paths.length > 0) {
            request.setVolumePublishPath(paths[0].toString());
        }
        return node().nodeGetVolumeHealth(request.build()).getVolumeHealth().getHealthStatusesList();
    }

    private List<Csi.NodeGetStorageHealthResponse.StorageBackendHealth> storageHealth() {
        return node().nodeGetStorageHealth(Csi.NodeGetStorageHealthRequest.getDefaultInstance())
                .getBackendHealthList();
    }

    private LoopDevice loopOf(Volume volume) {
        return RealHost.loopsOf(pool.volumes().imagePath(volume.id())).getFirst();
    }

    /** ext4's own test hook records an error as a real one would: counted in the superblock, shown in sysfs. */
    @Test
    void ext4ErrorsTheKernelRecordedAreReportedUntilTheNextStageRepairsThem() throws Exception {
        openPool();
        Volume volume = stagedVolume("ext4");
        Path trigger = Path.of("/sys/fs/ext4", loopOf(volume).name(), "trigger_fs_error");
        assumeTrue(Files.exists(trigger), "this kernel has no ext4 trigger_fs_error");
        assertThat(health(volume.id())).isEmpty();

        Files.writeString(trigger, "blockpool health test");
        awaitCounted(trigger.resolveSibling("errors_count"));

        assertThat(health(volume.id())).singleElement().satisfies(entry -> {
            assertThat(entry.getStatus()).isEqualTo(Csi.VolumeHealthErrorType.DEGRADED);
            assertThat(entry.getReason()).isEqualTo("FilesystemErrors");
            assertThat(entry.getMessage())
                    .contains("1 error(s)", "trigger_test_error", "e2fsck -p", staging.toString());
        });
        // The record is the superblock's: a new stage's e2fsck -p clears it.
        unstage(volume);
        stage(volume);
        assertThat(health(volume.id())).isEmpty();
    }

    /**
     * Waits until the kernel shows the error in {@code errorsCount}: ext4 copies a new error into
     * its superblock, which that file reads, from a work queue, a moment after the error.
     */
    private static void awaitCounted(Path errorsCount) throws IOException, InterruptedException {
        long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (Files.readString(errorsCount).strip().equals("0")) {
            assertThat(System.nanoTime() - giveUp)
                    .as("the kernel counts the error")
                    .isNegative();
            Thread.sleep(10);
        }
    }

    @Test
    void aShutDownXfsIsInaccessible() {
        openPool();
        Volume volume = stagedVolume("xfs");
        assertThat(health(volume.id())).isEmpty();

        RealHost.run("xfs_io", "-x", "-c", "shutdown", staging.toString());

        assertThat(health(volume.id())).singleElement().satisfies(entry -> {
            assertThat(entry.getStatus()).isEqualTo(Csi.VolumeHealthErrorType.INACCESSIBLE);
            assertThat(entry.getReason()).isEqualTo("FilesystemFailed");
            assertThat(entry.getMessage()).contains("xfs", "Input/output error", "xfs_repair");
        });
        // Unstaging and staging again mounts it anew, replaying its log.
        unstage(volume);
        stage(volume);
        assertThat(health(volume.id())).isEmpty();
    }

    @Test
    void anImageUnlinkedWhileInUseIsDataLoss() throws IOException {
        openPool();
        Volume volume = stagedVolume("ext4");
        Files.delete(pool.volumes().imagePath(volume.id()));

        assertThat(health(volume.id()))
                .extracting(Csi.VolumeHealth.VolumeHealthEntry::getReason)
                .containsExactlyInAnyOrder("ImageDeleted", "ImageMissing");
        assertThat(health(volume.id()))
                .allSatisfy(entry -> assertThat(entry.getStatus()).isEqualTo(Csi.VolumeHealthErrorType.DATA_LOSS));
    }

    /** The pool's server dies under a staged volume: every health call says so, none hangs, and stats still answer. */
    @Test
    void aPoolThatDoesNotAnswerIsUnreachableAndNoCallWaitsForIt() throws Exception {
        assumeTrue(SilentFuseMount.available(), "no /dev/fuse");
        openPool();
        Volume volume = stagedVolume("ext4");
        scratch.closeAfter(SilentFuseMount.on(pool.root()));

        assertThat(storageHealth()).singleElement().satisfies(backend -> {
            assertThat(backend.getStatus()).isEqualTo(Csi.StorageHealthErrorType.STORAGE_UNREACHABLE);
            assertThat(backend.getReason()).isEqualTo("PoolUnavailable");
            assertThat(backend.getMessage()).contains("does not answer within 5 s");
        });
        assertThat(health(volume.id())).singleElement().satisfies(entry -> {
            assertThat(entry.getStatus()).isEqualTo(Csi.VolumeHealthErrorType.INACCESSIBLE);
            assertThat(entry.getReason()).isEqualTo("PoolUnavailable");
        });
        // The volume's usage comes from its own filesystem, which still answers: stats never ask the pool
        // about a device the plugin has found bound to the volume's image before.
        assertThat(node().nodeGetVolumeStats(Csi.NodeGetVolumeStatsRequest.newBuilder()
                                .setVolumeId(volume.id())
                                .setVolumePath(staging.toString())
                                .build())
                        .getUsageList())
                .anySatisfy(usage -> {
                    assertThat(usage.getUnit()).isEqualTo(Csi.VolumeUsage.Unit.BYTES);
                    assertThat(usage.getTotal()).isPositive();
                });
    }

    /** A path the CO names that holds another, hung filesystem is not looked into. */
    @Test
    void aVolumePathOnAFilesystemThatDoesNotAnswerIsAnsweredAtOnce() throws Exception {
        assumeTrue(SilentFuseMount.available(), "no /dev/fuse");
        openPool();
        Volume volume = stagedVolume("ext4");
        Path hung = Files.createDirectories(dir.resolve("kubelet/pods/hung/volumes/vol"));
        scratch.closeAfter(SilentFuseMount.on(hung));

        assertCode(
                () -> node().nodeGetVolumeStats(Csi.NodeGetVolumeStatsRequest.newBuilder()
                        .setVolumeId(volume.id())
                        .setVolumePath(hung.toString())
                        .build()),
                Status.Code.NOT_FOUND);
        assertThat(health(volume.id(), hung)).isEmpty();
    }

    @Test
    void aFullPoolAndAReadOnlyPoolAreDegradedStorage() throws IOException {
        Path root = dir.resolve("pool");
        RealHost.run("mount", "-t", "tmpfs", "-o", "size=8m", "blockpool-health-test", root.toString());
        openPool();
        assertThat(storageHealth()).isEmpty();

        try (OutputStream out = Files.newOutputStream(root.resolve("filler"))) {
            byte[] block = new byte[(int) MiB];
            for (int i = 0; i < 16; i++) {
                out.write(block);
            }
        } catch (IOException e) {
            // ENOSPC: the pool is full, which is the point
        }
        assertThat(storageHealth()).singleElement().satisfies(backend -> {
            assertThat(backend.getStatus()).isEqualTo(Csi.StorageHealthErrorType.STORAGE_DEGRADED);
            assertThat(backend.getReason()).isEqualTo("PoolFull");
        });

        Files.delete(root.resolve("filler"));
        RealHost.run("mount", "-o", "remount,ro", root.toString());
        assertThat(storageHealth()).singleElement().satisfies(backend -> {
            assertThat(backend.getStatus()).isEqualTo(Csi.StorageHealthErrorType.STORAGE_DEGRADED);
            assertThat(backend.getReason()).isEqualTo("PoolReadOnly");
            assertThat(backend.getMessage()).contains("read-only");
        });
    }
}
