package dev.blockpool.node;

import static dev.blockpool.csi.CsiRequests.block;
import static dev.blockpool.csi.CsiRequests.mount;
import static dev.blockpool.csi.StatusAssertions.assertCode;
import static org.assertj.core.api.Assertions.assertThat;

import csi.v1.Csi;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import csi.v1.NodeGrpc;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.csi.CsiKeys;
import dev.blockpool.pool.AccessType;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.Volume;
import io.grpc.Status;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Paths a faulty or hostile caller gives the node: it never deletes, or mounts over or through,
 * anything it did not make. Everything here lives in the test's own temporary directory: the
 * device node and fifo are made there, the "outside" the symlinks point to is a sentinel there.
 */
@NeedsRoot
class NodePathSafetyRealHostTest {

    @RegisterExtension
    final NodeScratch scratch = new NodeScratch("blockpool-paths-it-", "mknod");

    private Path dir;
    private Pool pool;
    private Path staging;
    private Path socket;
    private NodeGrpc.NodeBlockingStub node;

    @BeforeEach
    void setUp() {
        dir = scratch.dir();
        pool = scratch.pool();
        staging = scratch.staging();
        socket = scratch.socket();
        node = scratch.serve();
    }

    private Volume volume(String name, AccessType type) {
        return scratch.volume(name, 64 * NodeScratch.MiB, "ext4", type);
    }

    private Csi.NodeUnpublishVolumeRequest unpublish(String volumeId, Path target) {
        return Csi.NodeUnpublishVolumeRequest.newBuilder()
                .setVolumeId(volumeId)
                .setTargetPath(target.toString())
                .build();
    }

    private Csi.NodePublishVolumeRequest publish(Volume volume, Path target, Csi.VolumeCapability capability) {
        return Csi.NodePublishVolumeRequest.newBuilder()
                .setVolumeId(volume.id())
                .setStagingTargetPath(staging.toString())
                .setTargetPath(target.toString())
                .setVolumeCapability(capability)
                .build();
    }

    private void stage(Volume volume, Csi.VolumeCapability capability) {
        scratch.stage(node, volume, capability);
    }

    @Test
    void unpublishRemovesNothingItDidNotMake() throws IOException {
        Volume volume = volume("unpublished", AccessType.MOUNT);
        Path outside = Files.writeString(dir.resolve("sentinel"), "precious");
        Path pods = dir.resolve("kubelet/pods");
        Path file = Files.writeString(pods.resolve("file"), "content");
        Path link = Files.createSymbolicLink(pods.resolve("link"), outside);
        Path device = pods.resolve("null-device");
        RealHost.run("mknod", device.toString(), "c", "1", "3"); // /dev/null's numbers, in the temp dir
        Path fifo = pods.resolve("fifo");
        RealHost.run("mkfifo", fifo.toString());
        Path full = Files.createDirectories(pods.resolve("full"));
        Files.writeString(full.resolve("data"), "x");

        for (Path target : new Path[] {file, link, device, fifo}) {
            node.nodeUnpublishVolume(unpublish(volume.id(), target)); // not published there: nothing to undo
            assertThat(Files.exists(target, LinkOption.NOFOLLOW_LINKS))
                    .as("%s is kept", target)
                    .isTrue();
        }
        assertCode(() -> node.nodeUnpublishVolume(unpublish(volume.id(), full)), Status.Code.FAILED_PRECONDITION);
        assertThat(full.resolve("data")).exists();
        assertThat(Files.readString(outside)).isEqualTo("precious");

        // Made by the driver: an empty directory goes.
        Path empty = Files.createDirectories(pods.resolve("empty"));
        node.nodeUnpublishVolume(unpublish(volume.id(), empty));
        assertThat(empty).doesNotExist();
    }

    @Test
    void theDriversOwnSocketAndPoolAreNeverTargets() throws IOException {
        Volume volume = volume("own", AccessType.MOUNT);
        try (ServerSocketChannel listening = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            listening.bind(UnixDomainSocketAddress.of(socket));
            assertCode(() -> node.nodeUnpublishVolume(unpublish(volume.id(), socket)), Status.Code.INVALID_ARGUMENT);
            assertThat(socket).exists();
        }
        Path image = pool.volumes().imagePath(volume.id());
        Path metadata = image.resolveSibling(volume.id() + ".json");
        for (Path inPool : new Path[] {image, metadata, pool.root(), pool.root().resolve("volumes/new-dir")}) {
            assertCode(() -> node.nodeUnpublishVolume(unpublish(volume.id(), inPool)), Status.Code.INVALID_ARGUMENT);
            assertCode(
                    () -> node.nodePublishVolume(publish(volume, inPool, mount(Mode.SINGLE_NODE_WRITER))),
                    Status.Code.INVALID_ARGUMENT);
        }
        assertThat(image).exists();
        assertThat(metadata).exists();
        assertThat(pool.root().resolve("volumes/new-dir")).doesNotExist();
    }

    @Test
    void aSymlinkAtTheTargetNeverMovesTheMountElsewhere() throws IOException {
        Volume fs = volume("fs", AccessType.MOUNT);
        stage(fs, mount(Mode.SINGLE_NODE_WRITER));
        Path elsewhere = Files.createDirectories(dir.resolve("elsewhere"));
        Path target =
                Files.createDirectories(dir.resolve("kubelet/pods/p1/volumes")).resolve("vol");
        Files.createSymbolicLink(target, elsewhere);

        assertCode(
                () -> node.nodePublishVolume(publish(fs, target, mount(Mode.SINGLE_NODE_WRITER))),
                Status.Code.FAILED_PRECONDITION);
        assertThat(RealHost.mountsAt(elsewhere)).isEmpty();
        assertThat(RealHost.mountsAt(target)).isEmpty();
        node.nodeUnpublishVolume(unpublish(fs.id(), target));
        assertThat(Files.isSymbolicLink(target))
                .as("the symlink is not the driver's to delete")
                .isTrue();
    }

    @Test
    void aSymlinkAtABlockTargetNeverBindsTheDeviceElsewhere() throws IOException {
        Volume raw = volume("raw", AccessType.BLOCK);
        stage(raw, block(Mode.SINGLE_NODE_WRITER));
        Path elsewhere = Files.createFile(dir.resolve("elsewhere-file"));
        Path target = Files.createDirectories(dir.resolve("kubelet/pods/p2/volumeDevices"))
                .resolve("vol");
        Files.createSymbolicLink(target, elsewhere);

        assertCode(
                () -> node.nodePublishVolume(publish(raw, target, block(Mode.SINGLE_NODE_WRITER))),
                Status.Code.FAILED_PRECONDITION);
        assertThat(RealHost.mountsAt(elsewhere)).isEmpty();
        assertThat(Files.size(elsewhere)).isZero();
    }

    @Test
    void aBlockTargetOverAFileWithContentIsRefusedAndKept() throws IOException {
        Volume raw = volume("raw-over-file", AccessType.BLOCK);
        stage(raw, block(Mode.SINGLE_NODE_WRITER));
        Path target = Files.createDirectories(dir.resolve("kubelet/pods/p3/volumeDevices"))
                .resolve("vol");
        Files.writeString(target, "a pod's data");
        assertCode(
                () -> node.nodePublishVolume(publish(raw, target, block(Mode.SINGLE_NODE_WRITER))),
                Status.Code.FAILED_PRECONDITION);
        assertThat(Files.readString(target)).isEqualTo("a pod's data");
        assertThat(RealHost.mountsAt(target)).isEmpty();
    }

    @Test
    void aTargetThatIsTheStagingPathOrInsideItIsInvalid() {
        Volume fs = volume("same", AccessType.MOUNT);
        stage(fs, mount(Mode.SINGLE_NODE_WRITER));
        assertCode(
                () -> node.nodePublishVolume(publish(fs, staging, mount(Mode.SINGLE_NODE_WRITER))),
                Status.Code.INVALID_ARGUMENT);
        assertCode(
                () -> node.nodePublishVolume(publish(fs, staging.resolve("inner"), mount(Mode.SINGLE_NODE_WRITER))),
                Status.Code.INVALID_ARGUMENT);
        assertThat(RealHost.mountsAt(staging)).hasSize(1);
    }

    private Csi.NodePublishVolumeRequest inline(String handle, Path target) {
        return Csi.NodePublishVolumeRequest.newBuilder()
                .setVolumeId(handle)
                .setTargetPath(target.toString())
                .setVolumeCapability(mount(Mode.SINGLE_NODE_WRITER))
                .putVolumeContext(CsiKeys.EPHEMERAL, "true")
                .putVolumeContext(CsiKeys.EPHEMERAL_SIZE, "16Mi")
                .build();
    }

    @Test
    void nothingIsMountedOverADirectoryWithContent() throws IOException {
        Volume fs = volume("over-content", AccessType.MOUNT);
        Path full = Files.createDirectories(dir.resolve("kubelet/pods/p4/volumes/vol"));
        Files.writeString(full.resolve("data"), "a pod's data");
        assertCode(
                () -> node.nodeStageVolume(Csi.NodeStageVolumeRequest.newBuilder()
                        .setVolumeId(fs.id())
                        .setStagingTargetPath(full.toString())
                        .setVolumeCapability(mount(Mode.SINGLE_NODE_WRITER))
                        .build()),
                Status.Code.FAILED_PRECONDITION);
        assertCode(() -> node.nodePublishVolume(inline("csi-over-content", full)), Status.Code.FAILED_PRECONDITION);
        assertThat(RealHost.mountsAt(full)).isEmpty();
        assertThat(full.resolve("data")).hasContent("a pod's data");
        assertThat(pool.volumes().list()).extracting(Volume::id).containsExactly(fs.id()); // no inline leftover
    }

    @Test
    void anInlineVolumeGoesWithItsLastPublishAndIsAsLargeAsItsFilesystemNeeds() {
        Path first = dir.resolve("kubelet/pods/p5/volumes/vol");
        Path second = dir.resolve("kubelet/pods/p6/volumes/vol");
        Csi.NodePublishVolumeRequest xfs = inline("csi-twice", first).toBuilder()
                .setVolumeCapability(mount("xfs", Mode.SINGLE_NODE_WRITER))
                .build();
        node.nodePublishVolume(xfs); // 16Mi asked; mkfs.xfs needs 300 MiB
        node.nodePublishVolume(xfs.toBuilder().setTargetPath(second.toString()).build());
        assertThat(pool.volumes().list())
                .singleElement()
                .satisfies(v -> assertThat(v.capacityBytes()).isEqualTo(300L << 20));

        node.nodeUnpublishVolume(unpublish("csi-twice", first));
        assertThat(RealHost.mountsAt(second)).hasSize(1);
        assertThat(pool.volumes().list()).hasSize(1);
        node.nodeUnpublishVolume(unpublish("csi-twice", second));
        assertThat(pool.volumes().list()).isEmpty();
        assertThat(RealHost.loopsUnder(dir)).isEmpty();
    }

    @Test
    void unstageAtAPathWhereTheVolumeIsNotStagedLeavesItsStagingAlone() throws IOException {
        Volume fs = volume("staged-elsewhere", AccessType.MOUNT);
        stage(fs, mount(Mode.SINGLE_NODE_WRITER));
        Path other = Files.createDirectories(dir.resolve("kubelet/staging/other"));
        node.nodeUnstageVolume(Csi.NodeUnstageVolumeRequest.newBuilder()
                .setVolumeId(fs.id())
                .setStagingTargetPath(other.toString())
                .build());
        assertThat(RealHost.mountsAt(staging)).hasSize(1);
    }
}
