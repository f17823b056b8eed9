package dev.blockpool.controller;

import static dev.blockpool.controller.ControllerHarness.MIB;
import static dev.blockpool.controller.ControllerHarness.createRequest;
import static dev.blockpool.controller.ControllerHarness.fromSnapshot;
import static dev.blockpool.controller.ControllerHarness.fromVolume;
import static org.assertj.core.api.Assertions.assertThat;

import csi.v1.Csi.CreateSnapshotRequest;
import csi.v1.Csi.DeleteVolumeRequest;
import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.HostRequirements;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.common.ProcessCommandRunner;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Snapshot, restore and clone keep data byte for byte: the data is written and read back through
 * real loop devices attached to the pool's images. Needs root; skipped otherwise.
 */
@NeedsRoot
class SnapshotDataRealHostTest {

    private static final int SIZE = (int) (64 * MIB);
    /** Regions written with random data: start of the device, the middle, unaligned, the very end. */
    private static final long[][] REGIONS = {
        {0, 3 * MIB}, {17 * MIB + 4096, 2 * MIB}, {40 * MIB + 512, 5 * MIB}, {SIZE - 2 * MIB, 2 * MIB}
    };

    private final CommandRunner commands = new ProcessCommandRunner();
    private final List<String> attached = new ArrayList<>();

    @TempDir
    Path poolDir;

    private ControllerHarness controller;

    @BeforeEach
    void setUp() {
        HostRequirements.assumeRootWithLoopDevices();
        HostRequirements.assumeCommand("losetup");
        controller = new ControllerHarness(poolDir);
    }

    @AfterEach
    void tearDown() {
        for (String device : attached) {
            commands.run("losetup", "--detach", device);
        }
        if (controller != null) {
            controller.close();
        }
    }

    @Test
    void snapshotRestoreAndCloneKeepDataByteForByte() throws IOException {
        var stub = controller.stub();
        String source = stub.createVolume(createRequest("pvc-data", SIZE).build())
                .getVolume()
                .getVolumeId();

        byte[] original = new byte[SIZE];
        writePattern(source, original, 1);
        assertThat(readThroughLoop(image(source), SIZE)).isEqualTo(original);

        String snapshot = stub.createSnapshot(CreateSnapshotRequest.newBuilder()
                        .setName("snap-data")
                        .setSourceVolumeId(source)
                        .build())
                .getSnapshot()
                .getSnapshotId();

        byte[] overwritten = original.clone();
        writePattern(source, overwritten, 2);
        assertThat(overwritten).isNotEqualTo(original);

        String restored = stub.createVolume(createRequest("pvc-restored", SIZE)
                        .setVolumeContentSource(fromSnapshot(snapshot))
                        .build())
                .getVolume()
                .getVolumeId();
        String clone = stub.createVolume(createRequest("pvc-clone", SIZE)
                        .setVolumeContentSource(fromVolume(source))
                        .build())
                .getVolume()
                .getVolumeId();
        String restoredLarger = stub.createVolume(createRequest("pvc-restored-larger", 2L * SIZE)
                        .setVolumeContentSource(fromSnapshot(snapshot))
                        .build())
                .getVolume()
                .getVolumeId();

        assertThat(readThroughLoop(image(restored), SIZE))
                .as("restore = the data at snapshot time")
                .isEqualTo(original);
        assertThat(readThroughLoop(image(clone), SIZE))
                .as("clone = the source's current data")
                .isEqualTo(overwritten);
        byte[] larger = readThroughLoop(image(restoredLarger), 2 * SIZE);
        assertThat(Arrays.copyOf(larger, SIZE)).isEqualTo(original);
        assertThat(Arrays.copyOfRange(larger, SIZE, 2 * SIZE))
                .as("the grown tail")
                .isEqualTo(new byte[SIZE]);

        // the snapshot is independent of its source: deleting the source changes nothing
        stub.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(source).build());
        stub.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(restored).build());
        String again = stub.createVolume(createRequest("pvc-restored-again", SIZE)
                        .setVolumeContentSource(fromSnapshot(snapshot))
                        .build())
                .getVolume()
                .getVolumeId();
        assertThat(readThroughLoop(image(again), SIZE)).isEqualTo(original);

        // and writing a restored volume leaves the snapshot alone
        byte[] changed = original.clone();
        writePattern(again, changed, 3);
        String fromSnapshotLater = stub.createVolume(createRequest("pvc-restored-later", SIZE)
                        .setVolumeContentSource(fromSnapshot(snapshot))
                        .build())
                .getVolume()
                .getVolumeId();
        assertThat(readThroughLoop(image(fromSnapshotLater), SIZE)).isEqualTo(original);
    }

    private Path image(String volumeId) {
        return controller.pool().volumes().imagePath(volumeId);
    }

    /**
     * Writes random data over {@link #REGIONS} through a loop device on the volume's image, and into {@code expected}.
     */
    private void writePattern(String volumeId, byte[] expected, long seed) throws IOException {
        Random random = new Random(seed);
        String device = attach(image(volumeId), false);
        try (FileChannel channel = FileChannel.open(Path.of(device), StandardOpenOption.WRITE)) {
            for (long[] region : REGIONS) {
                byte[] data = new byte[(int) region[1]];
                random.nextBytes(data);
                System.arraycopy(data, 0, expected, (int) region[0], data.length);
                ByteBuffer buffer = ByteBuffer.wrap(data);
                while (buffer.hasRemaining()) {
                    channel.write(buffer, region[0] + buffer.position());
                }
            }
            channel.force(true);
        } finally {
            detach(device);
        }
    }

    private byte[] readThroughLoop(Path image, int length) throws IOException {
        String device = attach(image, true);
        try (FileChannel channel = FileChannel.open(Path.of(device), StandardOpenOption.READ)) {
            assertThat(channel.size()).as("size of %s", device).isEqualTo(length);
            ByteBuffer buffer = ByteBuffer.allocate(length);
            while (buffer.hasRemaining() && channel.read(buffer, buffer.position()) >= 0) {
                // keep reading
            }
            return buffer.array();
        } finally {
            detach(device);
        }
    }

    private String attach(Path image, boolean readOnly) {
        List<String> command = new ArrayList<>(List.of("losetup", "--find", "--show"));
        if (readOnly) {
            command.add("--read-only");
        }
        command.add(image.toString());
        String device = commands.runChecked(CommandRunner.DEFAULT_TIMEOUT, command)
                .stdout()
                .strip();
        attached.add(device);
        return device;
    }

    private void detach(String device) {
        commands.runChecked("losetup", "--detach", device);
        attached.remove(device);
    }
}
