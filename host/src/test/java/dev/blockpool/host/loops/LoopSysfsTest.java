package dev.blockpool.host.loops;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.StorageException;
import dev.blockpool.host.mounts.DeviceNumber;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LoopSysfsTest {

    @TempDir
    Path root;

    private Path sys;
    private Path proc;

    /** Each file of the made-up pool has an identity of its own, as {@link #sysfs} gives it. */
    private static final ImageIdentities IMAGES = new ImageIdentities(new ImageIdentities.PoolFiles() {
        @Override
        public Optional<FileId> idOf(Path image) {
            return Optional.of(fakeId(image.toString()));
        }

        @Override
        public DeviceNumber filesystemOf(Path directory) {
            return POOL_DEVICE;
        }

        @Override
        public boolean isMounted(DeviceNumber device) {
            return device.equals(POOL_DEVICE);
        }
    });

    private static final DeviceNumber POOL_DEVICE = new DeviceNumber(0, 1);

    private static FileId fakeId(String path) {
        return new FileId(POOL_DEVICE, path.hashCode());
    }

    /**
     * The made-up sysfs, each device's backing file identified as LOOP_GET_STATUS64 would: the
     * same file, the same identity; another file, another one.
     */
    private LoopSysfs sysfs() {
        return new LoopSysfs(sys, Path.of("/dev"), (name, number) -> {
            try {
                String backing = Files.readString(sys.resolve(name).resolve("loop/backing_file"))
                        .strip();
                return Optional.of(fakeId(backing.replace(" (deleted)", "")));
            } catch (IOException e) {
                return Optional.empty();
            }
        });
    }

    /** A made-up /sys: block/loopN, and dev/block/MAJOR:MINOR links to them, as the kernel has them. */
    @BeforeEach
    void makeSys() throws IOException {
        sys = Files.createDirectories(root.resolve("block"));
        Files.createDirectories(root.resolve("dev/block"));
        proc = Files.createDirectories(root.resolve("proc"));
    }

    /** Loop calls that do nothing but record what was asked, and then do {@code effect}. */
    private static final class RecordedCalls implements LoopCalls {
        final List<String> calls = new ArrayList<>();
        private final Runnable effect;

        RecordedCalls(Runnable effect) {
            this.effect = effect;
        }

        @Override
        public String attach(Path image, boolean readOnly) {
            throw new AssertionError("no attach expected");
        }

        @Override
        public int detach(LoopDevice device) {
            calls.add("detach " + device.name());
            effect.run();
            return 0;
        }

        @Override
        public void setCapacity(LoopDevice device) {
            calls.add("set-capacity " + device.name());
        }
    }

    private void device(String name, String dev, long sectors, String ro, String backing, String autoclear)
            throws IOException {
        Path dir = Files.createDirectories(sys.resolve(name));
        Path link = root.resolve("dev/block/" + dev);
        Files.deleteIfExists(link);
        Files.createSymbolicLink(link, Path.of("../../block/" + name));
        Files.writeString(dir.resolve("dev"), dev + "\n");
        Files.writeString(dir.resolve("size"), sectors + "\n");
        Files.writeString(dir.resolve("ro"), ro + "\n");
        if (backing != null) {
            Files.createDirectories(dir.resolve("loop"));
            Files.writeString(dir.resolve("loop/backing_file"), backing + "\n");
            Files.writeString(dir.resolve("loop/autoclear"), autoclear + "\n");
        }
    }

    @Test
    void readsBoundDevicesAndSkipsFreeOnes() throws IOException {
        device("loop0", "7:0", 131072, "0", "/var/lib/blockpool/volumes/vol-a.img", "0");
        device("loop1", "7:1", 0, "0", null, null); // free
        device("loop2", "7:2", 2048, "1", "/var/lib/blockpool/volumes/vol b.img (deleted)", "1");
        Files.createDirectories(sys.resolve("vda"));

        LoopSysfs sysfs = sysfs();
        assertThat(sysfs.list()).hasSize(2);

        LoopDevice a = sysfs.read("loop0").orElseThrow();
        assertThat(a.device()).isEqualTo(Path.of("/dev/loop0"));
        assertThat(a.number()).isEqualTo(new DeviceNumber(7, 0));
        assertThat(a.backingFile()).isEqualTo(Path.of("/var/lib/blockpool/volumes/vol-a.img"));
        assertThat(a.sizeBytes()).isEqualTo(64L << 20);
        assertThat(a.readOnly()).isFalse();
        assertThat(a.autoclear()).isFalse();
        assertThat(a.backingFileDeleted()).isFalse();

        LoopDevice b = sysfs.read("loop2").orElseThrow();
        assertThat(b.backingFile()).isEqualTo(Path.of("/var/lib/blockpool/volumes/vol b.img"));
        assertThat(b.backingFileDeleted()).isTrue();
        assertThat(b.readOnly()).isTrue();
        assertThat(b.autoclear()).isTrue();

        assertThat(sysfs.read("loop1")).isEmpty();
        assertThat(sysfs.read("loop9")).isEmpty();
    }

    @Test
    void aDeviceOnItsWayOutIsNeverReused() throws IOException {
        device("loop0", "7:0", 2048, "0", "/pool/volumes/vol-a.img", "1");
        device("loop1", "7:1", 2048, "0", "/pool/volumes/vol-a.img", "0");
        LoopSysfs sysfs = sysfs();
        LoopDevices loops = new HostLoopDevices(
                new RecordedCalls(() -> {
                    throw new AssertionError("no call expected");
                }),
                sysfs,
                IMAGES,
                proc,
                Duration.ofMillis(300));
        assertThat(loops.boundTo(Path.of("/pool/volumes/vol-a.img"))).hasSize(2);
        assertThat(loops.reusableFor(Path.of("/pool/volumes/vol-a.img")))
                .get()
                .extracting(LoopDevice::name)
                .isEqualTo("loop1");
        assertThat(loops.byNumber(new DeviceNumber(7, 0)))
                .get()
                .extracting(LoopDevice::name)
                .isEqualTo("loop0");
        assertThat(loops.byNumber(new DeviceNumber(7, 9))).isEmpty();
        assertThat(loops.byName("loop1")).get().extracting(LoopDevice::number).isEqualTo(new DeviceNumber(7, 1));
    }

    @Test
    void aNumberLeadsToItsDeviceWhateverItsMinor() throws IOException {
        // With max_part, loopN's minor is N shifted: the number is looked up, never guessed.
        device("loop3", "7:48", 2048, "0", "/pool/volumes/vol-a.img", "0");
        device("loop4", "7:64", 2048, "0", "/pool/volumes/vol-b.img", "0");
        LoopDevices loops =
                new HostLoopDevices(new RecordedCalls(() -> {}), sysfs(), IMAGES, proc, Duration.ofMillis(300));
        assertThat(loops.byNumber(new DeviceNumber(7, 48)))
                .get()
                .extracting(LoopDevice::name)
                .isEqualTo("loop3");
        assertThat(loops.byNumber(new DeviceNumber(7, 3))).isEmpty();
        assertThat(loops.boundTo(Path.of("/pool/volumes/vol-b.img")))
                .extracting(LoopDevice::name)
                .containsExactly("loop4");
    }

    @Test
    void anAutoclearDeviceIsNeverDetachedAgainOnlyWaitedFor() throws Exception {
        device("loop4", "7:4", 2048, "0", "/pool/volumes/vol-a.img", "1");
        LoopDevice leaving = sysfs().read("loop4").orElseThrow();
        RecordedCalls runner = new RecordedCalls(() -> {});
        LoopDevices loops = new HostLoopDevices(runner, sysfs(), IMAGES, proc, Duration.ofMillis(300));

        // Still held elsewhere after the grace period (another mount namespace): it frees itself
        // once released, nothing of the driver's is left to undo, so this is no error.
        loops.detach(leaving);
        assertThat(runner.calls).isEmpty();

        // Freed on its last close and reused at once by another volume: not ours to touch.
        device("loop4", "7:4", 2048, "0", "/pool/volumes/vol-b.img", "0");
        loops.detach(leaving);
        assertThat(runner.calls).isEmpty();
        assertThat(sysfs().read("loop4"))
                .get()
                .extracting(LoopDevice::backingFile)
                .isEqualTo(Path.of("/pool/volumes/vol-b.img"));
    }

    @Test
    void aDeviceInUseByNobodyElseIsDetached() throws IOException {
        device("loop5", "7:5", 2048, "0", "/pool/volumes/vol-a.img", "0");
        LoopDevice loop = sysfs().read("loop5").orElseThrow();
        RecordedCalls runner = new RecordedCalls(() -> {
            try {
                Files.delete(sys.resolve("loop5/loop/backing_file")); // what the kernel does
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        new HostLoopDevices(runner, sysfs(), IMAGES, proc, Duration.ofMillis(300)).detach(loop);
        assertThat(runner.calls).containsExactly("detach loop5");
    }

    @Test
    void aDeviceThatWillNotDetachIsBusyWithItsHoldersForARetry() throws IOException {
        device("loop6", "7:6", 2048, "0", "/pool/volumes/vol-a.img", "0");
        LoopDevice loop = sysfs().read("loop6").orElseThrow();
        RecordedCalls runner = new RecordedCalls(() -> {}); // the call succeeds, the kernel keeps it bound
        Path dd = Files.createDirectories(proc.resolve("42/fd"));
        Files.writeString(proc.resolve("42/comm"), "dd\n");
        Files.createSymbolicLink(dd.resolve("3"), Path.of("/dev/loop6"));
        LoopDevices loops = new HostLoopDevices(runner, sysfs(), IMAGES, proc, Duration.ofMillis(200));
        assertThatThrownBy(() -> loops.detach(loop)).isInstanceOfSatisfying(StorageException.class, e -> {
            assertThat(e.kind()).isEqualTo(StorageException.Kind.BUSY);
            assertThat(e.getMessage()).contains("still in use", "pid 42 (dd) has /dev/loop6 open");
        });
    }

    @Test
    void aDeviceRemovedWhileItsFilesAreReadIsGoneWhicheverWayTheErrorComes() {
        // Opening a file of a removed device, and reading one opened before it went.
        assertThat(LoopSysfs.isGone(new java.nio.file.FileSystemException(
                        "/sys/block/loop9/loop/backing_file", null, "No such device")))
                .isTrue();
        assertThat(LoopSysfs.isGone(new IOException("No such device"))).isTrue();
        assertThat(LoopSysfs.isGone(new IOException("Permission denied"))).isFalse();
    }
}
