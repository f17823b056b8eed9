package dev.blockpool.host.mounts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.HostRequirements;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.common.StorageException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Binds with flags on the real kernel (root only): a tmpfs in the test's own directory stands
 * for a staged volume. Every mount under the directory is taken down afterwards, even on failure.
 */
@NeedsRoot
class HostMounterRealHostTest {

    private final BlockingCalls blocking = new BlockingCalls("test-syscall", 2);
    private final MountTable table = new ProcMountTable();
    private Path dir;
    private Path staging;
    private Path target;

    @BeforeEach
    void setUp() throws IOException {
        HostRequirements.assumeRootWithLoopDevices();
        dir = Files.createTempDirectory("blockpool-mounter-it-");
        staging = Files.createDirectories(dir.resolve("staging"));
        target = Files.createDirectories(dir.resolve("pods/p/volumes/v"));
        MountSyscalls.mount("tmpfs", staging.toString(), "tmpfs", 0, "size=1m");
    }

    @AfterEach
    void tearDown() throws IOException {
        if (dir == null) {
            return;
        }
        for (int i = 0; i < 10 && !under(dir).isEmpty(); i++) {
            under(dir)
                    .reversed()
                    .forEach(m -> MountSyscalls.umount2(m.mountPoint().toString(), MountSyscalls.MNT_DETACH));
        }
        assertThat(under(dir)).as("mounts left").isEmpty();
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    private List<MountInfo> under(Path path) {
        return table.mounts().stream()
                .filter(m -> m.mountPoint().startsWith(path))
                .toList();
    }

    @Test
    void aReadOnlyBindIsNeverSeenReadWrite() throws Exception {
        LinuxMountCalls calls = new LinuxMountCalls(blocking);
        assumeTrue(calls.atomicBinds(), "the kernel has no mount_setattr(2)");
        HostMounter mounter = new HostMounter(calls, table);
        AtomicBoolean done = new AtomicBoolean();
        AtomicReference<MountInfo> seenWritable = new AtomicReference<>();
        Thread watcher = Thread.ofPlatform().start(() -> {
            while (!done.get()) {
                table.allAt(target).stream()
                        .filter(m -> !m.readOnly())
                        .findFirst()
                        .ifPresent(seenWritable::set);
            }
        });
        try {
            for (int i = 0; i < 300 && seenWritable.get() == null; i++) {
                mounter.bind(staging, target, true, List.of("nosuid", "nodev"));
                MountInfo bound = table.at(target).orElseThrow();
                assertThat(bound.mountOptions()).contains("ro", "nosuid", "nodev");
                mounter.unmount(bound, false);
            }
        } finally {
            done.set(true);
            watcher.join();
        }
        assertThat(seenWritable.get()).as("a read-write bind at the target").isNull();
        Files.writeString(staging.resolve("f"), "x"); // the source stays writable
    }

    @Test
    void aBindThatCannotBeMovedIntoPlaceLeavesNothingMounted() throws IOException {
        LinuxMountCalls calls = new LinuxMountCalls(blocking);
        assumeTrue(calls.atomicBinds(), "the kernel has no mount_setattr(2)");
        Path file = Files.createFile(dir.resolve("pods/p/file"));
        assertThatThrownBy(() -> calls.bindWithFlags(
                        staging.toString(), file, MountCalls.TargetKind.DIRECTORY, MountSyscalls.MS_RDONLY))
                .isInstanceOf(StorageException.class);
        assertThat(under(dir.resolve("pods"))).isEmpty();
    }

    /** Where the kernel lacks the new mount API: the bind a kill left read-write is set read-only by the repeat. */
    @Test
    void aReadWriteLeftoverOfTheTwoStepBindIsSetReadOnly() throws IOException {
        LinuxMountCalls real = new LinuxMountCalls(blocking);
        MountCalls twoSteps = new MountCalls() {
            @Override
            public void mount(String source, Path at, TargetKind kind, String type, long flags, String data) {
                real.mount(source, at, kind, type, flags, data);
            }

            @Override
            public boolean atomicBinds() {
                return false;
            }

            @Override
            public void bindWithFlags(String source, Path at, TargetKind kind, long flags) {
                throw new AssertionError("not on this kernel");
            }

            @Override
            public void remountBind(Path at, TargetKind kind, long flags) {
                real.remountBind(at, kind, flags);
            }

            @Override
            public int unmount(Path at, boolean detach) {
                return real.unmount(at, detach);
            }
        };
        HostMounter mounter = new HostMounter(twoSteps, table);
        twoSteps.mount(staging.toString(), target, MountCalls.TargetKind.DIRECTORY, null, MountSyscalls.MS_BIND, null);
        assertThat(table.at(target).orElseThrow().readOnly()).isFalse();
        mounter.setBindFlags(target, true, List.of("noexec"));
        assertThat(table.at(target).orElseThrow().mountOptions()).contains("ro", "noexec");
        assertThatThrownBy(() -> Files.writeString(target.resolve("f"), "x")).isInstanceOf(IOException.class);
        assertThat(table.at(staging).orElseThrow().readOnly()).isFalse();
    }
}
