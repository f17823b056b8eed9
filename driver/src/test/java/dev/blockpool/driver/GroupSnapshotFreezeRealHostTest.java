package dev.blockpool.driver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import csi.v1.ControllerGrpc;
import csi.v1.Csi;
import csi.v1.Csi.VolumeCapability;
import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.csi.CsiRequests;
import dev.blockpool.host.NodeHost;
import dev.blockpool.host.filesystems.FilesystemFreezes;
import dev.blockpool.node.GroupMemberFreeze;
import dev.blockpool.pool.MemberFreeze;
import dev.blockpool.pool.Pool;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A group snapshot on a node-local pool is of one instant: a writer that writes a counter to
 * one volume and then the same counter to another, each write flushed, never finds the pair
 * restored from a group out of order (the second ahead of the first), a file system a dead
 * driver left frozen is thawed by the next one to start, and what the driver tells of a freeze
 * is what the kernel answers.
 */
@NeedsRoot
class GroupSnapshotFreezeRealHostTest {

    private static final long MIB = 1L << 20;
    private static final String NODE = "freeze-node";
    private static final VolumeCapability EXT4 =
            CsiRequests.mount("ext4", VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER);

    @AutoClose
    private NodeLocalDriver driver;

    private ControllerGrpc.ControllerBlockingStub controller;
    /** The driver's pool and this host's freezes, as a driver of the node sees them. */
    private Pool pool;

    private FilesystemFreezes freezes;

    @BeforeEach
    void start() throws Exception {
        driver = NodeLocalDriver.start("blockpool-freeze-", NODE);
        controller = driver.controller();
        pool = Pool.open(driver.pool(), NodeLocalDriver.RUNNER, Clock.systemUTC(), Duration.ofHours(1));
        freezes = FilesystemFreezes.onThisHost(
                NodeHost.onThisHost(NodeLocalDriver.RUNNER, new BlockingCalls()).loops(), new BlockingCalls());
    }

    @Test
    void theMembersOfAGroupAreOfOneInstant() throws Exception {
        String first = createVolume("pvc-data");
        String second = createVolume("pvc-log");
        Path firstMount = driver.stage(first, EXT4);
        Path secondMount = driver.stage(second, EXT4);
        AtomicLong written = new AtomicLong();
        AtomicBoolean stopped = new AtomicBoolean();
        AtomicReference<Throwable> writerFailure = new AtomicReference<>();
        // The order the test relies on: each counter reaches the first volume before the second.
        Thread writer = Thread.ofPlatform().start(() -> {
            try (FileChannel a = open(firstMount.resolve("counter"));
                    FileChannel b = open(secondMount.resolve("counter"))) {
                for (long i = 1; !stopped.get(); i++) {
                    write(a, i);
                    write(b, i);
                    written.set(i);
                }
            } catch (Throwable e) {
                writerFailure.set(e);
            }
        });
        List<Csi.VolumeGroupSnapshot> groups = new ArrayList<>();
        try {
            for (int g = 0; g < 4; g++) {
                long before = written.get();
                while (written.get() < before + 2 && writerFailure.get() == null) {
                    Thread.onSpinWait(); // the writer is under way before each group
                }
                groups.add(driver.groupController()
                        .createVolumeGroupSnapshot(Csi.CreateVolumeGroupSnapshotRequest.newBuilder()
                                .setName("group-" + g)
                                .addSourceVolumeIds(first)
                                .addSourceVolumeIds(second)
                                .build())
                        .getGroupSnapshot());
            }
        } finally {
            stopped.set(true);
            writer.join();
        }
        assertThat(writerFailure.get()).isNull();
        assertThat(driver.pool().resolve("frozen")).isEmptyDirectory();

        for (Csi.VolumeGroupSnapshot group : groups) {
            long firstValue = restoredCounter(group, first);
            long secondValue = restoredCounter(group, second);
            assertThat(secondValue)
                    .as(
                            "group %s: the second volume is never ahead of the first, nor behind by more than "
                                    + "the write in flight",
                            group.getGroupSnapshotId())
                    .isBetween(firstValue - 1, firstValue);
        }
    }

    @Test
    void aFileSystemADeadDriverLeftFrozenIsThawedByTheNextDriver() throws Exception {
        String volume = createVolume("pvc-frozen");
        driver.stage(volume, EXT4);
        Path image = pool.volumes().imagePath(volume);
        // What a driver killed between its freeze and its thaw leaves: the mark, and the file system frozen.
        pool.freezeMarks().mark(volume);
        assertThat(freezes.freeze(image)).hasSize(1);

        nodeHolder().thawLeftovers();

        assertThat(pool.freezeMarks().marked()).isEmpty();
        // A frozen file system refuses a second freeze: this one succeeds, so it was thawed.
        assertThat(freezes.freeze(image)).hasSize(1);
        freezes.thaw(image);
    }

    @Test
    void whatTheDriverTellsOfAFreezeIsWhatTheKernelSays() throws Exception {
        String volume = createVolume("pvc-told");
        driver.stage(volume, EXT4);
        Path image = pool.volumes().imagePath(volume);
        GroupMemberFreeze members = nodeHolder();

        try (MemberFreeze.Frozen frozen = members.freeze(List.of(volume))) {
            assertThat(frozen.volumeIds()).containsExactly(volume);
            assertThat(members.frozen(volume)).isPresent();
            assertThat(members.frozenCount()).isEqualTo(1);
            assertThatThrownBy(() -> freezes.freeze(image))
                    .as("the kernel refuses a second freeze: frozen")
                    .hasMessageContaining("cannot freeze");
        }

        assertThat(members.frozen(volume)).isEmpty();
        assertThat(members.frozenCount()).isZero();
        assertThat(pool.freezeMarks().marked()).isEmpty();
        // the kernel takes a freeze again: thawed
        assertThat(freezes.freeze(image)).hasSize(1);
        assertThat(freezes.thaw(image)).isEqualTo(FilesystemFreezes.Thaw.THAWED);
    }

    /**
     * The freeze of a driver holding the node's claim, on the driver's pool: the driver under
     * test, alive, holds the claim itself.
     */
    private GroupMemberFreeze nodeHolder() {
        return new GroupMemberFreeze(pool, freezes, Clock.systemUTC(), GroupMemberFreeze.BOUND, () -> true);
    }

    private String createVolume(String name) {
        return driver.createVolume(name, 64 * MIB, EXT4);
    }

    /** The counter in the member of {@code source} in {@code group}, read from a volume restored from it. */
    private long restoredCounter(Csi.VolumeGroupSnapshot group, String source) throws IOException {
        Csi.Snapshot member = group.getSnapshotsList().stream()
                .filter(s -> s.getSourceVolumeId().equals(source))
                .findFirst()
                .orElseThrow();
        String restored = controller
                .createVolume(Csi.CreateVolumeRequest.newBuilder()
                        .setName("restored-" + member.getSnapshotId())
                        .addVolumeCapabilities(EXT4)
                        .setVolumeContentSource(Csi.VolumeContentSource.newBuilder()
                                .setSnapshot(Csi.VolumeContentSource.SnapshotSource.newBuilder()
                                        .setSnapshotId(member.getSnapshotId())))
                        .build())
                .getVolume()
                .getVolumeId();
        Path mount = driver.stage(restored, EXT4);
        try {
            return Long.parseLong(Files.readString(mount.resolve("counter")).strip());
        } finally {
            driver.unstage(restored);
        }
    }

    private static FileChannel open(Path file) throws IOException {
        return FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
    }

    /** The counter as the file's whole content, on the volume's device before this returns. */
    private static void write(FileChannel file, long value) throws IOException {
        byte[] text = String.format("%020d%n", value).getBytes(StandardCharsets.US_ASCII);
        file.write(ByteBuffer.wrap(text), 0);
        file.force(true);
    }
}
