package dev.blockpool.host.filesystems;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.FsType;
import dev.blockpool.common.GrowthMarker;
import dev.blockpool.common.HostRequirements;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.host.loops.HostLoopDevices;
import dev.blockpool.host.loops.LoopDevice;
import dev.blockpool.host.loops.LoopDevices;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The offline growth of ext4 on a real loop device, killed mid-way as a driver is killed with its
 * children: resize2fs is not crash-safe (cut short, it leaves a filesystem e2fsck -p will not
 * repair), so the next stage must repair it and grow it again, with the data intact. Works in its
 * own temporary directory and detaches the device it attached.
 */
@NeedsRoot
class Ext4OfflineGrowthRealHostTest {

    private static final long MiB = 1L << 20;
    private static final CommandRunner RUNNER = new ProcessCommandRunner();
    private static final byte[] DATA =
            "written before the volume grew\n".repeat(1000).getBytes(StandardCharsets.UTF_8);

    private final BlockingCalls blocking = new BlockingCalls("test-syscall", 2);
    private final LoopDevices loops = new HostLoopDevices(blocking);
    private final HostFilesystems filesystems = new HostFilesystems(RUNNER, blocking);
    private Path dir;
    private LoopDevice attached;

    @BeforeEach
    void setUp() throws IOException {
        HostRequirements.assumeRootWithLoopDevices();
        HostRequirements.assumeCommand("debugfs");
        dir = Files.createTempDirectory("blockpool-grow-it-");
    }

    @AfterEach
    void tearDown() throws IOException {
        if (attached != null) {
            loops.detach(attached);
        }
        if (dir != null) {
            try (Stream<Path> walk = Files.walk(dir)) {
                for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    /**
     * Kills resize2fs once the device has taken this many of its writes (sectors written, from
     * the device's sysfs stat): at once, at points through its run, and after it is done.
     */
    @ParameterizedTest(name = "killed after {0} sectors written")
    @ValueSource(longs = {0, 8, 64, 256, 1024, 4096, Long.MAX_VALUE})
    void aGrowthKilledMidWayIsRepairedAtTheNextStageAndDoneAgainWithTheDataIntact(long sectors)
            throws IOException, InterruptedException {
        Path image = resized(dir.resolve("vol.img"), 64 * MiB);
        attached = loops.attach(image, false);
        Path device = attached.device();
        filesystems.format(device, FsType.EXT4);
        Path data = Files.write(dir.resolve("data"), DATA);
        RUNNER.runChecked("debugfs", "-w", "-R", "write " + data + " data", device.toString());
        resized(image, 256 * MiB);
        attached = loops.refreshCapacity(attached);
        RUNNER.runChecked("e2fsck", "-f", "-p", device.toString());

        // The growth as the driver starts it (its mark on disk), cut short.
        Path marker = Files.createFile(GrowthMarker.beside(image));
        long before = sectorsWritten(attached);
        Process resize = new ProcessBuilder("resize2fs", device.toString())
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
        while (resize.isAlive() && sectorsWritten(attached) - before < sectors) {
            Thread.onSpinWait();
        }
        resize.destroyForcibly();
        assertThat(resize.waitFor(30, TimeUnit.SECONDS)).isTrue();

        // What the next stage does before it mounts.
        filesystems.repairInterruptedGrowth(device, marker);
        filesystems.check(device, FsType.EXT4);
        filesystems.growUnmounted(attached, FsType.EXT4, marker);

        assertThat(marker).as("removed once the growth is done").doesNotExist();
        assertThat(RUNNER.run("e2fsck", "-f", "-n", device.toString()).exitCode())
                .as("a clean filesystem")
                .isZero();
        assertThat(Ext4Superblock.read(device).smallerThan(attached.sizeBytes()))
                .as("grown to its device")
                .isFalse();
        String read = RUNNER.runChecked("debugfs", "-R", "cat data", device.toString())
                .stdout();
        assertThat(read).isEqualTo(new String(DATA, StandardCharsets.UTF_8));
    }

    /** The device's sectors written so far: the 7th field of /sys/block/<name>/stat. */
    private static long sectorsWritten(LoopDevice device) throws IOException {
        String stat =
                Files.readString(Path.of("/sys/block", device.name(), "stat")).strip();
        return Long.parseLong(stat.split("\\s+")[6]);
    }

    private static Path resized(Path image, long bytes) throws IOException {
        try (RandomAccessFile file = new RandomAccessFile(image.toFile(), "rw")) {
            file.setLength(bytes);
        }
        return image;
    }
}
