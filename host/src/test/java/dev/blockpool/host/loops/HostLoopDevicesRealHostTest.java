package dev.blockpool.host.loops;

import static dev.blockpool.host.loops.LoopScratch.MiB;
import static dev.blockpool.host.loops.LoopScratch.image;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.host.mounts.PathState;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Loop devices through the loop ioctls, on real devices (root only). Each test works in its
 * own temporary directory and undoes every loop device and mount it made, even on failure; it
 * only ever detaches devices its own attaches returned.
 */
@NeedsRoot
class HostLoopDevicesRealHostTest {

    private final BlockingCalls blocking = new BlockingCalls("test-syscall", 4);
    private final LoopDevices loops = new HostLoopDevices(blocking);

    @RegisterExtension
    final LoopScratch scratch = new LoopScratch("blockpool-loop-it-");

    @Test
    void attachesReadsBackGrowsAndDetaches() throws IOException {
        Path image = image(scratch.dir(), "vol.img", 8 * MiB);
        LoopDevice device = scratch.attach(loops, image, false);
        assertThat(device.backingFileId()).isEqualTo(FileId.of(image));
        assertThat(device.sizeBytes()).isEqualTo(8 * MiB);
        assertThat(device.readOnly()).isFalse();
        assertThat(Files.readString(Path.of("/sys/block", device.name(), "queue/logical_block_size"))
                        .strip())
                .isEqualTo("512");
        assertThat(loops.boundTo(image)).containsExactly(device);
        assertThat(loops.byNumber(device.number())).contains(device);

        try (RandomAccessFile file = new RandomAccessFile(image.toFile(), "rw")) {
            file.setLength(24 * MiB);
        }
        assertThat(loops.refreshCapacity(device).sizeBytes()).isEqualTo(24 * MiB);

        LoopDevice readOnly = scratch.attach(loops, image, true);
        assertThat(readOnly.readOnly()).isTrue();
        assertThat(readOnly.name()).isNotEqualTo(device.name());

        loops.detach(readOnly);
        loops.detach(device);
        assertThat(loops.boundTo(image)).isEmpty();
        loops.detach(device); // gone already: nothing to do, and nobody else's device is touched
    }

    @Test
    void concurrentAttachesEachGetTheirOwnDevice() throws Exception {
        // They race for the same free device; those that lose it take another.
        List<Path> images = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            images.add(image(scratch.dir(), "vol-" + i + ".img", MiB));
        }
        List<Callable<LoopDevice>> attaches = images.stream()
                .map(image -> (Callable<LoopDevice>) () -> loops.attach(image, false))
                .toList();
        List<LoopDevice> attached = new ArrayList<>();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (Future<LoopDevice> result : threads.invokeAll(attaches)) {
                LoopDevice device = result.get();
                scratch.undo(() -> loops.detach(device));
                attached.add(device);
            }
        }
        assertThat(attached).extracting(LoopDevice::name).doesNotHaveDuplicates();
        for (int i = 0; i < images.size(); i++) {
            assertThat(attached.get(i).backingFileId()).isEqualTo(FileId.of(images.get(i)));
        }
    }

    @Test
    void aMissingDeviceNodeIsMadeAsTheKernelNumbersIt() throws IOException {
        // A /dev without the node (a container's): the node is made in that directory, nowhere else.
        Path dev = Files.createDirectories(scratch.dir().resolve("dev"));
        Files.createSymbolicLink(dev.resolve("loop-control"), Path.of("/dev/loop-control"));
        LoopSysfs sysfs = new LoopSysfs(Path.of("/sys/block"), dev, LinuxLoopCalls.status(blocking, dev));
        LoopDevices inContainer = new HostLoopDevices(
                new LinuxLoopCalls(blocking, sysfs, dev),
                sysfs,
                new ImageIdentities(blocking),
                Path.of("/proc"),
                Duration.ofSeconds(5));
        // The control device is never reached through a symlink either.
        assertThat(org.assertj.core.api.Assertions.catchThrowable(
                        () -> inContainer.attach(image(scratch.dir(), "refused.img", MiB), false)))
                .hasMessageContaining("loop-control");
        Files.delete(dev.resolve("loop-control"));
        LoopScratch.RUNNER.runChecked(
                "cp", "-a", "/dev/loop-control", dev.resolve("loop-control").toString());
        assumeThat(deviceNodesWork(dev.resolve("loop-control")))
                .as("device nodes work in " + scratch.dir())
                .isTrue();

        Path image = image(scratch.dir(), "vol.img", 4 * MiB);
        LoopDevice device = scratch.attach(inContainer, image, false);
        assertThat(device.device()).isEqualTo(dev.resolve(device.name()));
        assertThat(PathState.of(device.device()))
                .isEqualTo(new PathState.File(java.util.Optional.of(device.number()), 0));
        assertThat(loops.boundTo(image)).extracting(LoopDevice::name).containsExactly(device.name());
    }

    @Test
    void directIoWhereThePoolFilesystemTakesItAndBufferedWithAWarningWhereNot() throws IOException {
        // An ext4 pool of the test's own: its disk (a loop device with 512-byte sectors) takes direct I/O.
        Path ext4Pool = scratch.dir().resolve("ext4-pool");
        scratch.mountExt4(loops, image(scratch.dir(), "ext4-pool.img", 64 * MiB), ext4Pool);
        LoopDevice direct = scratch.attach(loops, image(ext4Pool, "vol.img", 8 * MiB), false);
        assertThat(LoopSysfs.onThisHost(blocking).directIo(direct.name())).isTrue();

        // ramfs has no direct I/O at all: buffered, and said so once for the pool.
        Path ramPool = scratch.dir().resolve("ram-pool");
        scratch.mount(ramPool, "mount", "-t", "ramfs", "blockpool-test", ramPool.toString());
        String warnings = stderrOf(() -> {
            try {
                scratch.attach(loops, image(ramPool, "a.img", MiB), false);
                scratch.attach(loops, image(ramPool, "b.img", MiB), false);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        List<LoopDevice> buffered = loops.list().stream()
                .filter(l -> l.backingFile().getParent().getFileName().equals(ramPool.getFileName()))
                .toList();
        assertThat(buffered)
                .hasSize(2)
                .allSatisfy(l -> assertThat(LoopSysfs.onThisHost(blocking).directIo(l.name()))
                        .isFalse());
        assertThat(warnings.lines()
                        .filter(l -> l.contains("takes no direct I/O"))
                        .toList())
                .singleElement()
                .asString()
                .contains(ramPool.toString())
                .contains("page cache");
    }

    /** A filesystem mounted nodev refuses to open device nodes on it. */
    private static boolean deviceNodesWork(Path node) {
        try (var _ = Files.newByteChannel(node)) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** What the warn-level log (slf4j-simple writes to stderr) says while {@code work} runs. */
    private static String stderrOf(Runnable work) {
        PrintStream original = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            work.run();
        } finally {
            System.setErr(original);
        }
        String text = captured.toString(StandardCharsets.UTF_8);
        original.print(text);
        return text;
    }
}
