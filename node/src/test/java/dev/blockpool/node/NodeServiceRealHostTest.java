package dev.blockpool.node;

import static dev.blockpool.csi.StatusAssertions.assertCode;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import csi.v1.Csi;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import csi.v1.NodeGrpc;
import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.HostRequirements;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.csi.CsiKeys;
import dev.blockpool.csi.CsiRequests;
import dev.blockpool.csi.StatusAssertions;
import dev.blockpool.host.NodeHost;
import dev.blockpool.host.VolumeStats;
import dev.blockpool.host.loops.LoopDevice;
import dev.blockpool.host.mounts.MountInfo;
import dev.blockpool.pool.AccessType;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.Volume;
import io.grpc.Status;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The node service on real loop devices, mkfs, fsck and mounts (root only; skipped with the
 * reason otherwise). Each test works below its own temporary directory — pool, staging and
 * target paths — and removes every mount and loop device there afterwards, even on failure.
 * A new {@link NodeService} is built for every call, as if the driver restarted in between:
 * nothing the service does may depend on memory.
 */
@NeedsRoot
class NodeServiceRealHostTest {

    private static final long MiB = NodeScratch.MiB;

    @RegisterExtension
    final NodeScratch scratch = new NodeScratch(
            "blockpool-node-it-", "losetup", "blkid", "mkfs.ext4", "mkfs.xfs", "e2fsck", "resize2fs", "xfs_growfs");

    private Path dir;
    private Pool pool;
    private Path staging;

    @BeforeEach
    void setUp() {
        dir = scratch.dir();
        pool = scratch.pool();
        staging = scratch.staging();
    }

    /** A freshly built service: every call below goes through a "restarted" driver. */
    private NodeGrpc.NodeBlockingStub node() {
        return scratch.serve();
    }

    private Volume createVolume(String name, long bytes, String fsType, AccessType type) {
        return scratch.volume(name, bytes, fsType, type);
    }

    private Path target(String pod) {
        return dir.resolve("kubelet/pods/" + pod + "/volumes/vol");
    }

    private void stage(Volume volume, Csi.VolumeCapability capability) {
        scratch.stage(node(), volume, capability);
    }

    private void publish(Volume volume, Path target, Csi.VolumeCapability capability, boolean readOnly) {
        node().nodePublishVolume(Csi.NodePublishVolumeRequest.newBuilder()
                .setVolumeId(volume.id())
                .setStagingTargetPath(staging.toString())
                .setTargetPath(target.toString())
                .setVolumeCapability(capability)
                .setReadonly(readOnly)
                .build());
    }

    private void unpublish(String volumeId, Path target) {
        node().nodeUnpublishVolume(Csi.NodeUnpublishVolumeRequest.newBuilder()
                .setVolumeId(volumeId)
                .setTargetPath(target.toString())
                .build());
    }

    private void unstage(Volume volume) {
        scratch.unstage(node(), volume);
    }

    private Csi.NodeGetVolumeStatsResponse stats(String volumeId, Path path) {
        return node().nodeGetVolumeStats(Csi.NodeGetVolumeStatsRequest.newBuilder()
                .setVolumeId(volumeId)
                .setVolumePath(path.toString())
                .build());
    }

    private Csi.VolumeHealth health(String volumeId) {
        return node().nodeGetVolumeHealth(Csi.NodeGetVolumeHealthRequest.newBuilder()
                        .setVolumeId(volumeId)
                        .build())
                .getVolumeHealth();
    }

    /** Runs the step twice, each time through a new service, and checks the host state after each. */
    private void twice(Runnable step, Runnable check) {
        step.run();
        check.run();
        step.run();
        check.run();
    }

    private void assertMountedOnce(Path path) {
        assertThat(RealHost.mountsAt(path)).as("mounts at %s", path).hasSize(1);
    }

    private void assertOneLoop(Volume volume) {
        assertThat(RealHost.loopsOf(pool.volumes().imagePath(volume.id())))
                .as("loop devices of the image")
                .hasSize(1);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"ext4", "xfs"})
    void fullLifecycleWithARestartBeforeEveryCallLeavesNothingBehind(String fsType) throws IOException {
        Volume volume = createVolume("lifecycle-" + fsType, 512 * MiB, fsType, AccessType.MOUNT);
        Csi.VolumeCapability capability = CsiRequests.mount(Mode.SINGLE_NODE_MULTI_WRITER);
        Path first = target("pod-a");
        Path second = target("pod-b");

        twice(() -> stage(volume, capability), () -> {
            assertMountedOnce(staging);
            assertOneLoop(volume);
            assertThat(RealHost.mountsAt(staging).getFirst().fsType()).isEqualTo(fsType);
        });
        twice(() -> publish(volume, first, capability, false), () -> assertMountedOnce(first));
        twice(() -> publish(volume, second, capability, false), () -> assertMountedOnce(second));
        assertOneLoop(volume);

        Files.writeString(first.resolve("hello.txt"), "written through pod-a");
        assertThat(Files.readString(second.resolve("hello.txt"))).isEqualTo("written through pod-a");

        twice(() -> unpublish(volume.id(), first), () -> assertThat(first).doesNotExist());
        twice(() -> unpublish(volume.id(), second), () -> assertThat(second).doesNotExist());
        twice(() -> unstage(volume), () -> {
            assertThat(RealHost.mountsAt(staging)).isEmpty();
            assertThat(RealHost.loopsOf(pool.volumes().imagePath(volume.id()))).isEmpty();
        });
        pool.volumes().delete(volume.id());

        assertThat(RealHost.mountsUnder(dir))
                .as("mounts left below the test directory")
                .isEmpty();
        assertThat(RealHost.loopsUnder(dir))
                .as("loop devices left on the test's images")
                .isEmpty();
        assertThat(pool.volumes().list()).isEmpty();
        assertThat(staging).isEmptyDirectory();
    }

    @Test
    void stagedDataSurvivesUnstageAndRestageWithoutReformatting() throws IOException {
        Volume volume = createVolume("restage", 64 * MiB, "ext4", AccessType.MOUNT);
        Csi.VolumeCapability capability = CsiRequests.mount(Mode.SINGLE_NODE_WRITER);
        stage(volume, capability);
        Files.writeString(staging.resolve("kept.txt"), "still here");
        unstage(volume);
        stage(volume, capability);
        assertThat(Files.readString(staging.resolve("kept.txt"))).isEqualTo("still here");
        unstage(volume);
    }

    /** An unclean shutdown leaves a dirty xfs log, which the mount replays: no false "corruption". */
    @Test
    void anXfsVolumeWithADirtyLogStagesAgain() throws IOException {
        HostRequirements.assumeCommand("xfs_io");
        Volume volume = createVolume("dirty-log", 320 * MiB, "xfs", AccessType.MOUNT);
        Csi.VolumeCapability capability = CsiRequests.mount(Mode.SINGLE_NODE_WRITER);
        stage(volume, capability);
        Files.writeString(staging.resolve("kept.txt"), "before the crash");
        RealHost.run("sync");
        RealHost.run("xfs_io", "-x", "-c", "shutdown", staging.toString()); // as a crash would leave the log
        unstage(volume);

        stage(volume, capability);
        assertThat(Files.readString(staging.resolve("kept.txt"))).isEqualTo("before the crash");
        unstage(volume);
        assertThat(RealHost.loopsUnder(dir)).isEmpty();
    }

    /** Filesystem flags take effect at stage; the bind of a publish takes only the per-mount ones. */
    @Test
    void filesystemFlagsApplyAtStageAndPerMountFlagsAtPublish() {
        Volume volume = createVolume("flags", 64 * MiB, "ext4", AccessType.MOUNT);
        Csi.VolumeCapability capability = CsiRequests.mount(Mode.SINGLE_NODE_WRITER).toBuilder()
                .setMount(Csi.VolumeCapability.MountVolume.newBuilder()
                        .addMountFlags("errors=remount-ro,data=journal")
                        .addMountFlags("noexec"))
                .build();
        Path target = target("flags");
        node().nodeStageVolume(Csi.NodeStageVolumeRequest.newBuilder()
                .setVolumeId(volume.id())
                .setStagingTargetPath(staging.toString())
                .setVolumeCapability(capability)
                .build());
        publish(volume, target, capability, true);
        assertThat(RealHost.mountsAt(staging).getFirst().superOptions()).contains("data=journal");
        assertThat(RealHost.mountsAt(target).getFirst().mountOptions()).contains("ro", "noexec");
        unpublish(volume.id(), target);
        unstage(volume);
        assertThat(RealHost.mountsUnder(dir)).isEmpty();
    }

    /** The kernel records mount points with symlinks resolved; kubelet's directory may be a symlink. */
    @Test
    void pathsThroughASymlinkedDirectoryAreFoundInTheMountTable() throws IOException {
        Path link = Files.createSymbolicLink(dir.resolve("kubelet-link"), dir.resolve("kubelet"));
        Volume volume = createVolume("symlinked", 64 * MiB, "ext4", AccessType.MOUNT);
        Csi.VolumeCapability capability = CsiRequests.mount(Mode.SINGLE_NODE_WRITER);
        String linkedStaging = link.resolve("staging/globalmount").toString();
        Path linkedTarget = link.resolve("pods/linked/volumes/vol");
        Runnable stageThroughLink = () -> node().nodeStageVolume(Csi.NodeStageVolumeRequest.newBuilder()
                .setVolumeId(volume.id())
                .setStagingTargetPath(linkedStaging)
                .setVolumeCapability(capability)
                .build());
        Runnable publishThroughLink = () -> node().nodePublishVolume(Csi.NodePublishVolumeRequest.newBuilder()
                .setVolumeId(volume.id())
                .setStagingTargetPath(linkedStaging)
                .setTargetPath(linkedTarget.toString())
                .setVolumeCapability(capability)
                .build());

        twice(stageThroughLink, () -> assertMountedOnce(staging));
        twice(publishThroughLink, () -> assertMountedOnce(linkedTarget));
        assertThat(bytes(stats(volume.id(), linkedTarget)).getTotal())
                .isGreaterThan(48 * MiB)
                .isLessThanOrEqualTo(64 * MiB);
        twice(
                () -> unpublish(volume.id(), linkedTarget),
                () -> assertThat(linkedTarget).doesNotExist());
        twice(
                () -> node().nodeUnstageVolume(Csi.NodeUnstageVolumeRequest.newBuilder()
                        .setVolumeId(volume.id())
                        .setStagingTargetPath(linkedStaging)
                        .build()),
                () -> assertThat(RealHost.mountsUnder(dir)).isEmpty());
        assertThat(RealHost.loopsUnder(dir)).isEmpty();
    }

    @Test
    void refusesWhatTheVolumeCannotServe() {
        Volume fs = createVolume("refusals", 64 * MiB, "ext4", AccessType.MOUNT);
        Volume other = createVolume("other", 64 * MiB, "ext4", AccessType.MOUNT);
        Csi.VolumeCapability single = CsiRequests.mount(Mode.SINGLE_NODE_SINGLE_WRITER);

        assertCode(() -> stage(fs, CsiRequests.block(Mode.SINGLE_NODE_WRITER)), Status.Code.FAILED_PRECONDITION);
        assertCode(() -> publish(fs, target("early"), single, false), Status.Code.FAILED_PRECONDITION);

        stage(fs, single);
        assertCode(() -> stage(other, single), Status.Code.ALREADY_EXISTS); // another volume at the staging path
        publish(fs, target("one"), single, false);
        publish(fs, target("one"), single, false);
        assertCode(() -> publish(fs, target("two"), single, false), Status.Code.FAILED_PRECONDITION);
        assertCode(() -> publish(fs, target("one"), single, true), Status.Code.ALREADY_EXISTS);
        assertCode(() -> unstage(fs), Status.Code.FAILED_PRECONDITION); // still published
        assertCode(
                () -> node().nodeStageVolume(Csi.NodeStageVolumeRequest.newBuilder()
                        .setVolumeId(fs.id())
                        .setStagingTargetPath(staging.toString())
                        .setVolumeCapability(single.toBuilder()
                                .setMount(single.getMount().toBuilder().addMountFlags("loop,offset=0")))
                        .build()),
                Status.Code.INVALID_ARGUMENT);

        unpublish(fs.id(), target("one"));
        unstage(fs);
        assertThat(RealHost.mountsUnder(dir)).isEmpty();
        assertThat(RealHost.loopsUnder(dir)).isEmpty();
    }

    @Test
    void readOnlyPublishRefusesWrites() throws IOException {
        Volume volume = createVolume("readonly", 64 * MiB, "ext4", AccessType.MOUNT);
        Csi.VolumeCapability capability = CsiRequests.mount(Mode.SINGLE_NODE_MULTI_WRITER);
        stage(volume, capability);
        publish(volume, target("rw"), capability, false);
        publish(volume, target("ro"), capability, true);
        Files.writeString(target("rw").resolve("f"), "x");
        assertThat(Files.readString(target("ro").resolve("f"))).isEqualTo("x");
        assertThatThrownBy(() -> Files.writeString(target("ro").resolve("g"), "y"))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("Read-only");
        unpublish(volume.id(), target("rw"));
        unpublish(volume.id(), target("ro"));
        unstage(volume);
    }

    /**
     * EBUSY is never success: the mount stays until the file is closed, and the unpublish is
     * ABORTED, which kubelet retries, after it tried for a while.
     */
    @Test
    void unpublishIsAbortedWhileAFileIsOpenInTheTargetThenSucceeds() throws IOException {
        Volume volume = createVolume("busy", 64 * MiB, "ext4", AccessType.MOUNT);
        Csi.VolumeCapability capability = CsiRequests.mount(Mode.SINGLE_NODE_WRITER);
        Path target = target("busy");
        stage(volume, capability);
        publish(volume, target, capability, false);
        try (FileChannel open =
                FileChannel.open(target.resolve("held"), StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            assertCode(() -> unpublish(volume.id(), target), Status.Code.ABORTED);
            assertMountedOnce(target);
            assertThat(open.isOpen()).isTrue();
        }
        unpublish(volume.id(), target);
        assertThat(target).doesNotExist();
        unstage(volume);
        assertThat(RealHost.mountsUnder(dir)).isEmpty();
        assertThat(RealHost.loopsUnder(dir)).isEmpty();
    }

    /** A reader that lets go within the unpublish's tries does not fail it. */
    @Test
    void unpublishWaitsOutAReaderThatLetsGo() throws Exception {
        Volume volume = createVolume("reader", 64 * MiB, "ext4", AccessType.MOUNT);
        Csi.VolumeCapability capability = CsiRequests.mount(Mode.SINGLE_NODE_WRITER);
        Path target = target("reader");
        stage(volume, capability);
        publish(volume, target, capability, false);
        Files.writeString(target.resolve("read"), "data");
        FileChannel open = FileChannel.open(target.resolve("read"), StandardOpenOption.READ);
        Thread reader = Thread.ofPlatform().start(() -> {
            try {
                Thread.sleep(500);
                open.close();
            } catch (IOException | InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        try {
            unpublish(volume.id(), target);
        } finally {
            reader.join();
            open.close();
        }
        assertThat(target).doesNotExist();
        unstage(volume);
        assertThat(RealHost.mountsUnder(dir)).isEmpty();
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"ext4", "xfs"})
    void onlineExpansionIsVisibleInStatfsAndStatsMatchDf(String fsType) throws IOException {
        if (fsType.equals("ext4")) {
            assumeTrue(
                    HostRequirements.hasCapability(HostRequirements.CAP_SYS_RESOURCE),
                    "skipped: growing a mounted ext4 needs CAP_SYS_RESOURCE, which this process lacks");
        }
        Volume volume = createVolume("grow-" + fsType, 512 * MiB, fsType, AccessType.MOUNT);
        Csi.VolumeCapability capability = CsiRequests.mount(Mode.SINGLE_NODE_WRITER);
        Path target = target("grow");
        stage(volume, capability);
        publish(volume, target, capability, false);
        Files.write(target.resolve("data.bin"), new byte[(int) (3 * MiB)]);

        long before = bytes(stats(volume.id(), target)).getTotal();
        pool.volumes().expand(volume.id(), 1024 * MiB);
        Csi.NodeExpandVolumeResponse expanded = node().nodeExpandVolume(Csi.NodeExpandVolumeRequest.newBuilder()
                .setVolumeId(volume.id())
                .setVolumePath(target.toString())
                .setCapacityRange(Csi.CapacityRange.newBuilder().setRequiredBytes(1024 * MiB))
                .build());
        assertThat(expanded.getCapacityBytes()).isEqualTo(1024 * MiB);

        Csi.NodeGetVolumeStatsResponse after = stats(volume.id(), target);
        assertThat(bytes(after).getTotal()).isGreaterThan(before + 400 * MiB).isLessThanOrEqualTo(1024 * MiB);
        assertThat(health(volume.id()).getHealthStatusesList()).isEmpty();

        // df(1) reads the same statfs(2): its numbers must be exactly ours.
        String[] df = RealHost.run("df", "-B1", "--output=size,used,avail,itotal,iused,iavail", target.toString())
                .strip()
                .split("\n")[1]
                .strip()
                .split("\\s+");
        Csi.VolumeUsage inodes = after.getUsageList().stream()
                .filter(u -> u.getUnit() == Csi.VolumeUsage.Unit.INODES)
                .findFirst()
                .orElseThrow();
        assertThat(List.of(
                        bytes(after).getTotal(),
                        bytes(after).getUsed(),
                        bytes(after).getAvailable(),
                        inodes.getTotal(),
                        inodes.getUsed(),
                        inodes.getAvailable()))
                .containsExactly(
                        Long.parseLong(df[0]),
                        Long.parseLong(df[1]),
                        Long.parseLong(df[2]),
                        Long.parseLong(df[3]),
                        Long.parseLong(df[4]),
                        Long.parseLong(df[5]));

        unpublish(volume.id(), target);
        unstage(volume);
    }

    /**
     * An expanded ext4 reaches the volume's size: online where the kernel lets the driver grow it
     * mounted; else NodeExpandVolume answers FAILED_PRECONDITION (in use: kubelet does not retry
     * while it stays mounted) and the next stage grows it before mounting it.
     */
    @Test
    void anExpandedExt4ReachesTheVolumesSizeOnlineOrAtItsNextStage() throws IOException {
        Volume volume = createVolume("grow-at-stage", 256 * MiB, "ext4", AccessType.MOUNT);
        Csi.VolumeCapability capability = CsiRequests.mount(Mode.SINGLE_NODE_WRITER);
        Path target = target("grow-at-stage");
        stage(volume, capability);
        publish(volume, target, capability, false);
        byte[] data = "written before the expansion\n".getBytes(StandardCharsets.UTF_8);
        Files.write(target.resolve("data.txt"), data);
        long before = bytes(stats(volume.id(), target)).getTotal();
        pool.volumes().expand(volume.id(), 512 * MiB);
        Csi.NodeExpandVolumeRequest request = Csi.NodeExpandVolumeRequest.newBuilder()
                .setVolumeId(volume.id())
                .setVolumePath(target.toString())
                .setVolumeCapability(capability)
                .setCapacityRange(Csi.CapacityRange.newBuilder().setRequiredBytes(512 * MiB))
                .build();

        if (HostRequirements.hasCapability(HostRequirements.CAP_SYS_RESOURCE)) {
            assertThat(node().nodeExpandVolume(request).getCapacityBytes()).isEqualTo(512 * MiB);
        } else {
            assertThat(StatusAssertions.failure(() -> node().nodeExpandVolume(request), Status.Code.FAILED_PRECONDITION)
                            .getStatus()
                            .getDescription())
                    .contains(
                            "CAP_SYS_RESOURCE",
                            "grows to the volume's " + 512 * MiB + " bytes at its next NodeStageVolume");
            assertThat(bytes(stats(volume.id(), target)).getTotal()).isEqualTo(before);
            unpublish(volume.id(), target);
            unstage(volume);
            stage(volume, capability);
            publish(volume, target, capability, false);
        }

        assertThat(bytes(stats(volume.id(), target)).getTotal())
                .isGreaterThan(before + 200 * MiB)
                .isLessThanOrEqualTo(512 * MiB);
        assertThat(Files.readAllBytes(target.resolve("data.txt"))).isEqualTo(data);
        // Grown already: kubelet's call after the stage finds nothing to do, with or without the capability.
        assertThat(node().nodeExpandVolume(request).getCapacityBytes()).isEqualTo(512 * MiB);
        unpublish(volume.id(), target);
        unstage(volume);
        assertThat(RealHost.mountsUnder(dir)).isEmpty();
        assertThat(RealHost.loopsUnder(dir)).isEmpty();
        RealHost.run("e2fsck", "-f", "-n", pool.volumes().imagePath(volume.id()).toString());
    }

    private Csi.NodeExpandVolumeResponse expand(Volume volume, Path path, Csi.VolumeCapability capability) {
        return node().nodeExpandVolume(Csi.NodeExpandVolumeRequest.newBuilder()
                .setVolumeId(volume.id())
                .setVolumePath(path.toString())
                .setVolumeCapability(capability)
                .build());
    }

    /** Only a mount or a block target of the volume is expanded; nothing is mounted anywhere else for it. */
    @Test
    void expansionNeedsAMountOfTheVolumeAtItsPath() throws IOException {
        Volume volume = createVolume("expand-where", 64 * MiB, "ext4", AccessType.MOUNT);
        Volume other = createVolume("expand-other", 64 * MiB, "ext4", AccessType.MOUNT);
        Csi.VolumeCapability capability = CsiRequests.mount(Mode.SINGLE_NODE_WRITER);
        Path otherStaging = Files.createDirectories(dir.resolve("kubelet/staging/other"));
        node().nodeStageVolume(Csi.NodeStageVolumeRequest.newBuilder()
                .setVolumeId(other.id())
                .setStagingTargetPath(otherStaging.toString())
                .setVolumeCapability(capability)
                .build());
        pool.volumes().expand(volume.id(), 128 * MiB);

        assertCode(() -> expand(volume, dir, capability), Status.Code.NOT_FOUND); // a directory, not a mount
        assertCode(() -> expand(volume, staging, capability), Status.Code.NOT_FOUND); // not staged
        stage(volume, capability);
        assertCode(() -> expand(volume, otherStaging, capability), Status.Code.NOT_FOUND); // another volume's mount
        assertThat(RealHost.mountsUnder(dir)).hasSize(2);

        unstage(volume);
        node().nodeUnstageVolume(Csi.NodeUnstageVolumeRequest.newBuilder()
                .setVolumeId(other.id())
                .setStagingTargetPath(otherStaging.toString())
                .build());
        assertThat(RealHost.mountsUnder(dir)).isEmpty();
        assertThat(RealHost.loopsUnder(dir)).isEmpty();
    }

    @Test
    void expandingABlockTargetRefreshesItsDevices() {
        Volume volume = createVolume("expand-block", 64 * MiB, "", AccessType.BLOCK);
        Csi.VolumeCapability capability = CsiRequests.block(Mode.SINGLE_NODE_MULTI_WRITER);
        Path writer = target("grow-writer");
        Path reader = target("grow-reader");
        stage(volume, capability);
        publish(volume, writer, capability, false);
        publish(volume, reader, capability, true);
        pool.volumes().expand(volume.id(), 96 * MiB);

        assertThat(expand(volume, writer, capability).getCapacityBytes()).isEqualTo(96 * MiB);
        assertThat(RealHost.loopsOf(pool.volumes().imagePath(volume.id())))
                .extracting(LoopDevice::sizeBytes)
                .containsExactly(96 * MiB, 96 * MiB);
        assertThat(bytes(stats(volume.id(), reader)).getTotal()).isEqualTo(96 * MiB);

        unpublish(volume.id(), reader);
        unpublish(volume.id(), writer);
        unstage(volume);
        assertThat(RealHost.loopsUnder(dir)).isEmpty();
    }

    private static Csi.VolumeUsage bytes(Csi.NodeGetVolumeStatsResponse stats) {
        return stats.getUsageList().stream()
                .filter(u -> u.getUnit() == Csi.VolumeUsage.Unit.BYTES)
                .findFirst()
                .orElseThrow();
    }

    @Test
    void rawBlockDataSurvivesUnpublishAndRepublish() throws IOException {
        Volume volume = createVolume("raw", 64 * MiB, "", AccessType.BLOCK);
        Csi.VolumeCapability capability = CsiRequests.block(Mode.SINGLE_NODE_SINGLE_WRITER);
        Path target = target("raw-pod");
        byte[] payload = "raw block payload".getBytes(StandardCharsets.UTF_8);

        twice(() -> stage(volume, capability), () -> assertOneLoop(volume));
        twice(() -> publish(volume, target, capability, false), () -> assertMountedOnce(target));
        assertCode(() -> publish(volume, target("second"), capability, false), Status.Code.FAILED_PRECONDITION);
        try (FileChannel device = FileChannel.open(target, StandardOpenOption.WRITE)) {
            device.write(ByteBuffer.wrap(payload), 8 * MiB);
            device.force(true);
        }
        assertThat(bytes(stats(volume.id(), target)).getTotal()).isEqualTo(64 * MiB);

        twice(() -> unpublish(volume.id(), target), () -> assertThat(target).doesNotExist());
        publish(volume, target, capability, false);
        ByteBuffer read = ByteBuffer.allocate(payload.length);
        try (FileChannel device = FileChannel.open(target, StandardOpenOption.READ)) {
            device.read(read, 8 * MiB);
        }
        assertThat(read.array()).isEqualTo(payload);

        unpublish(volume.id(), target);
        twice(() -> unstage(volume), () -> assertThat(RealHost.loopsUnder(dir)).isEmpty());
        assertThat(RealHost.mountsUnder(dir)).isEmpty();
    }

    /**
     * A read-only bind of a device node still lets a process write the device through it: a
     * read-only publish must bind a device the kernel itself refuses to write.
     */
    @Test
    void readOnlyRawBlockPublishCannotBeWritten() throws IOException {
        Volume volume = createVolume("raw-ro", 64 * MiB, "", AccessType.BLOCK);
        Path image = pool.volumes().imagePath(volume.id());
        Csi.VolumeCapability capability = CsiRequests.block(Mode.SINGLE_NODE_MULTI_WRITER);
        Path writer = target("raw-writer");
        Path reader = target("raw-reader");
        byte[] payload = "written by the writer".getBytes(StandardCharsets.UTF_8);

        stage(volume, capability);
        publish(volume, writer, capability, false);
        twice(() -> publish(volume, reader, capability, true), () -> assertMountedOnce(reader));
        assertThat(RealHost.loopsOf(image))
                .as("the staged device and the reader's read-only one")
                .hasSize(2)
                .filteredOn(LoopDevice::readOnly)
                .hasSize(1);
        assertCode(() -> publish(volume, reader, capability, false), Status.Code.ALREADY_EXISTS);

        try (FileChannel device = FileChannel.open(writer, StandardOpenOption.WRITE)) {
            device.write(ByteBuffer.wrap(payload), 4 * MiB);
            device.force(true);
        }
        ByteBuffer read = ByteBuffer.allocate(payload.length);
        try (FileChannel device = FileChannel.open(reader, StandardOpenOption.READ)) {
            device.read(read, 4 * MiB);
        }
        assertThat(read.array()).isEqualTo(payload);
        // Depending on the kernel, opening a read-only block device for writing fails, or the write does.
        assertThatThrownBy(() -> {
                    try (FileChannel device = FileChannel.open(reader, StandardOpenOption.WRITE)) {
                        device.write(ByteBuffer.wrap(new byte[512]), 4 * MiB);
                        device.force(true);
                    }
                })
                .isInstanceOf(IOException.class);
        try (FileChannel device = FileChannel.open(writer, StandardOpenOption.READ)) {
            read.clear();
            device.read(read, 4 * MiB);
        }
        assertThat(read.array()).as("the data is untouched").isEqualTo(payload);

        twice(() -> unpublish(volume.id(), reader), () -> {
            assertThat(reader).doesNotExist();
            assertThat(RealHost.loopsOf(image))
                    .as("the reader's device is detached")
                    .singleElement()
                    .satisfies(l -> assertThat(l.readOnly()).isFalse());
        });
        unpublish(volume.id(), writer);
        unstage(volume);
        assertThat(RealHost.mountsUnder(dir)).isEmpty();
        assertThat(RealHost.loopsUnder(dir)).isEmpty();
    }

    /**
     * The loop device is detached behind the driver's back. The kernel refuses to free a loop
     * device that a mounted filesystem holds; {@code losetup -d} then only marks it to go away
     * on last close (autoclear). To take the stage away too, its mount is lazily detached, as
     * an administrator's {@code umount -l} would: the pod's bind mount is what still holds the
     * device. Its health must say so; unpublish and unstage must clean up.
     */
    @Test
    void corruptedStageIsCleanedUpByUnpublishAndUnstage() {
        Volume volume = createVolume("corrupt", 64 * MiB, "ext4", AccessType.MOUNT);
        Csi.VolumeCapability capability = CsiRequests.mount(Mode.SINGLE_NODE_WRITER);
        Path target = target("victim");
        stage(volume, capability);
        publish(volume, target, capability, false);
        LoopDevice loop =
                RealHost.loopsOf(pool.volumes().imagePath(volume.id())).getFirst();

        RealHost.run("losetup", "--detach", loop.device().toString());
        RealHost.run("umount", "--lazy", staging.toString());

        Csi.VolumeHealth health = health(volume.id());
        assertThat(health.getHealthStatusesList()).singleElement().satisfies(entry -> {
            assertThat(entry.getStatus()).isEqualTo(Csi.VolumeHealthErrorType.INACCESSIBLE);
            assertThat(entry.getReason()).isEqualTo("LoopDeviceDetached");
            assertThat(entry.getMessage()).contains("detached").contains(target.toString());
        });

        unpublish(volume.id(), target);
        unstage(volume);
        assertThat(RealHost.mountsUnder(dir)).isEmpty();
        assertThat(RealHost.loopsUnder(dir)).isEmpty();
    }

    @Test
    void rawBlockPublishWhoseLoopDeviceVanishedIsCleanedUp() {
        Volume volume = createVolume("vanished", 64 * MiB, "", AccessType.BLOCK);
        Csi.VolumeCapability capability = CsiRequests.block(Mode.SINGLE_NODE_WRITER);
        Path target = target("raw-victim");
        stage(volume, capability);
        publish(volume, target, capability, false);
        LoopDevice loop =
                RealHost.loopsOf(pool.volumes().imagePath(volume.id())).getFirst();

        // A bind of the device node does not hold the device open: this detach really happens.
        RealHost.run("losetup", "--detach", loop.device().toString());
        assertThat(RealHost.loopsUnder(dir)).isEmpty();
        // gone from loop sysfs: only the path the caller names still shows the bind
        assertThat(health(volume.id()).getHealthStatusesList()).isEmpty();
        Csi.VolumeHealth health = node().nodeGetVolumeHealth(Csi.NodeGetVolumeHealthRequest.newBuilder()
                        .setVolumeId(volume.id())
                        .setVolumePublishPath(target.toString())
                        .build())
                .getVolumeHealth();
        assertThat(health.getHealthStatusesList())
                .extracting(Csi.VolumeHealth.VolumeHealthEntry::getReason)
                .containsExactly("LoopDeviceDetached");

        unpublish(volume.id(), target);
        unstage(volume);
        assertThat(RealHost.mountsUnder(dir)).isEmpty();
        assertThat(target).doesNotExist();
    }

    @Test
    void ephemeralVolumeLivesAndDiesWithItsPublish() throws IOException {
        String handle = "csi-0123456789abcdef";
        Path target = target("inline");
        Consumer<Boolean> publish = ignored -> node().nodePublishVolume(Csi.NodePublishVolumeRequest.newBuilder()
                .setVolumeId(handle)
                .setTargetPath(target.toString())
                .setVolumeCapability(CsiRequests.mount(Mode.SINGLE_NODE_WRITER))
                .putVolumeContext(CsiKeys.EPHEMERAL, "true")
                .putVolumeContext("size", "64Mi")
                .putVolumeContext("csi.storage.k8s.io/pod.name", "inline")
                .build());

        twice(() -> publish.accept(true), () -> assertMountedOnce(target));
        assertThat(pool.volumes().list()).singleElement().satisfies(v -> {
            assertThat(v.capacityBytes()).isEqualTo(64 * MiB);
            assertThat(RealHost.loopsOf(pool.volumes().imagePath(v.id()))).hasSize(1);
        });
        Files.writeString(target.resolve("scratch"), "temporary");
        assertThat(bytes(stats(handle, target)).getTotal())
                .isGreaterThan(48 * MiB)
                .isLessThanOrEqualTo(64 * MiB);

        twice(() -> unpublish(handle, target), () -> assertThat(target).doesNotExist());
        assertThat(pool.volumes().list()).isEmpty();
        assertThat(RealHost.mountsUnder(dir)).isEmpty();
        assertThat(RealHost.loopsUnder(dir)).isEmpty();
    }

    private void publishInline(String handle, Path target, boolean readOnly) {
        node().nodePublishVolume(Csi.NodePublishVolumeRequest.newBuilder()
                .setVolumeId(handle)
                .setTargetPath(target.toString())
                .setReadonly(readOnly)
                .setVolumeCapability(CsiRequests.mount(Mode.SINGLE_NODE_WRITER))
                .putVolumeContext(CsiKeys.EPHEMERAL, "true")
                .putVolumeContext("size", "64Mi")
                .build());
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"ext4", "xfs"})
    void aReadOnlyEphemeralVolumeIsFormattedAndMountedReadOnly(String fsType) {
        String handle = "csi-readonly-" + fsType;
        Path target = target("inline-ro");
        node().nodePublishVolume(Csi.NodePublishVolumeRequest.newBuilder()
                .setVolumeId(handle)
                .setTargetPath(target.toString())
                .setReadonly(true)
                .setVolumeCapability(CsiRequests.mount(Mode.SINGLE_NODE_WRITER))
                .putVolumeContext(CsiKeys.EPHEMERAL, "true")
                .putVolumeContext("size", "320Mi") // xfs: 300MB at least
                .putVolumeContext("fsType", fsType)
                .build());
        assertMountedOnce(target);
        assertThat(RealHost.mountsAt(target).getFirst()).satisfies(m -> {
            assertThat(m.fsType()).isEqualTo(fsType);
            assertThat(m.readOnly()).isTrue();
        });
        assertThatThrownBy(() -> Files.writeString(target.resolve("f"), "x"))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("Read-only");

        unpublish(handle, target);
        assertThat(pool.volumes().list()).isEmpty();
        assertThat(RealHost.mountsUnder(dir)).isEmpty();
        assertThat(RealHost.loopsUnder(dir)).isEmpty();
    }

    @Test
    void aFailedEphemeralPublishDeletesTheVolumeItCreated() throws IOException {
        Path target = target("inline-blocked");
        Files.createDirectories(target.getParent());
        Files.writeString(target, "a file where the mount point should be");
        assertCode(() -> publishInline("csi-blocked", target, false), Status.Code.FAILED_PRECONDITION);
        assertThat(pool.volumes().list()).isEmpty();
        assertThat(RealHost.loopsUnder(dir)).isEmpty();
        assertThat(Files.readString(target)).startsWith("a file");
    }

    @Test
    void statsOfAStagedVolumeComeFromItsFilesystem() {
        Volume volume = createVolume("stats", 64 * MiB, "ext4", AccessType.MOUNT);
        stage(volume, CsiRequests.mount(Mode.SINGLE_NODE_WRITER));
        Csi.NodeGetVolumeStatsResponse stats = stats(volume.id(), staging);
        String[] statf = RealHost.run("stat", "-f", "-c", "%S %b", staging.toString())
                .strip()
                .split(" ");
        assertThat(bytes(stats).getTotal()).isEqualTo(Long.parseLong(statf[0]) * Long.parseLong(statf[1]));
        assertCode(() -> stats(volume.id(), dir.resolve("nowhere")), Status.Code.NOT_FOUND);
        assertCode(() -> stats(volume.id(), dir), Status.Code.NOT_FOUND);
        unstage(volume);
        List<MountInfo> left = RealHost.mountsUnder(dir);
        assertThat(left).isEmpty();
    }

    /**
     * What NodeGetVolumeStats answers in place, from the kernel's caches, is what the mount table
     * gives; anything it cannot be sure of is left to the mount table, never answered wrong. A
     * process that did not attach the device answers in place only once it has found the device
     * bound to the image by its identity (a plugin restarted in another container).
     */
    @Test
    void statsFromTheKernelsCachesAreWhatTheMountTableGives() throws IOException {
        VolumeStats host =
                NodeHost.onThisHost(RealHost.RUNNER, new BlockingCalls()).stats();
        Volume filesystem = createVolume("cached-fs", 64 * MiB, "ext4", AccessType.MOUNT);
        Path image = pool.volumes().imagePath(filesystem.id());
        stage(filesystem, CsiRequests.mount(Mode.SINGLE_NODE_WRITER));
        assertThat(host.usageFromCaches(image, staging)).isEmpty();
        Optional<VolumeStats.Usage> fromTable = host.usage(image, staging);
        Optional<VolumeStats.Usage> cached = host.usageFromCaches(image, staging);
        assertThat(cached).get().extracting(VolumeStats.Usage::filesystem).isNotEqualTo(Optional.empty());
        assertThat(cached).isEqualTo(fromTable);

        Volume other = createVolume("cached-other", 16 * MiB, "", AccessType.BLOCK);
        assertThat(host.usageFromCaches(pool.volumes().imagePath(other.id()), staging))
                .isEmpty();
        assertThat(host.usageFromCaches(image, staging.getParent())).isEmpty(); // no mount there
        Path linked = Files.createSymbolicLink(dir.resolve("linked"), staging.getParent())
                .resolve(staging.getFileName());
        assertThat(host.usageFromCaches(image, linked)).isEmpty(); // no symlink is followed in place
        assertThat(bytes(stats(filesystem.id(), linked)).getTotal()).isPositive(); // the mount table finds it
        unstage(filesystem);
        assertThat(host.usageFromCaches(image, staging)).isEmpty();

        Path target = target("cached-block");
        stage(other, CsiRequests.block(Mode.SINGLE_NODE_WRITER));
        publish(other, target, CsiRequests.block(Mode.SINGLE_NODE_WRITER), false);
        assertThat(host.usage(pool.volumes().imagePath(other.id()), target)).isPresent();
        assertThat(host.usageFromCaches(pool.volumes().imagePath(other.id()), target))
                .contains(new VolumeStats.Usage(Optional.empty(), Optional.of(16 * MiB)));
        assertThat(host.usageFromCaches(image, target)).isEmpty();
        unpublish(other.id(), target);
        unstage(other);
    }

    /** A pod's teardown needs nothing of the pool but the volume's ID: not its record, which may be unreadable. */
    @Test
    void aVolumeIsUnpublishedAndUnstagedWhateverItsRecordSays() throws IOException {
        Volume volume = createVolume("unreadable", 64 * MiB, "ext4", AccessType.MOUNT);
        Csi.VolumeCapability capability = CsiRequests.mount(Mode.SINGLE_NODE_WRITER);
        Path target = target("unreadable");
        stage(volume, capability);
        publish(volume, target, capability, false);
        Path record = pool.root().resolve("volumes/" + volume.id() + ".json");
        String written = Files.readString(record);
        Files.writeString(record, "{ not json");
        try {
            unpublish(volume.id(), target);
            unstage(volume);
            assertThat(RealHost.mountsUnder(dir)).isEmpty();
            assertThat(target).doesNotExist();
        } finally {
            Files.writeString(record, written);
        }
    }
}
