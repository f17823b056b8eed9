package dev.blockpool.host.cgroups;

import static dev.blockpool.host.loops.LoopScratch.MiB;
import static dev.blockpool.host.loops.LoopScratch.image;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.IoLimits;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.host.loops.HostLoopDevices;
import dev.blockpool.host.loops.LoopDevice;
import dev.blockpool.host.loops.LoopScratch;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The kernel's cgroup v1 throttle files as the driver writes them (root, and a host with the blkio
 * hierarchy at /sys/fs/cgroup/blkio): a pod's cgroups made for the test, below a cgroup of its own
 * that no kubelet uses, on a loop device of the test's own image; the cgroups are removed after,
 * even on failure.
 */
@NeedsRoot
class LinuxPodCgroupCallsRealHostTest {

    private static final Path HOST = LinuxPodCgroupCalls.HOST_ROOT;

    @RegisterExtension
    final LoopScratch scratch = new LoopScratch("blockpool-cgroup-it-");

    /** A cgroup of the host's blkio hierarchy, made for this test and removed after it. */
    private Path cgroup(Path path) throws IOException {
        Path made = Files.createDirectory(path);
        scratch.undo(() -> {
            try {
                Files.deleteIfExists(made); // rmdir: the kernel refuses it while a task is in it; none is
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        return made;
    }

    @Test
    void theKernelTakesTheRulesForThePodAndItsContainersAndDropsThemWhenLifted() throws Exception {
        Path blkio = HOST.resolve("blkio");
        assumeTrue(
                Files.isDirectory(blkio, LinkOption.NOFOLLOW_LINKS)
                        && !Files.exists(HOST.resolve("cgroup.controllers")),
                "skipped: no cgroup v1 blkio hierarchy at " + blkio);
        LoopDevice device = scratch.attach(
                new HostLoopDevices(new BlockingCalls("test-syscall", 2)),
                image(scratch.dir(), "throttled.img", 8 * MiB),
                false);
        String uid = UUID.randomUUID().toString();
        Path own = cgroup(blkio.resolve("blockpool-test-" + uid));
        Path pod = cgroup(cgroup(own.resolve("kubepods")).resolve("pod" + uid));
        Path container = cgroup(pod.resolve("0123abcd"));
        PodCgroupCalls calls = new LinuxPodCgroupCalls(HOST);

        assertThat(calls.limit(uid, device.number(), new IoLimits(200, 0, 10L << 20, 0)))
                .containsExactly(pod, container);
        for (Path cgroup : List.of(pod, container)) {
            assertThat(Files.readString(cgroup.resolve("blkio.throttle.read_iops_device")))
                    .isEqualTo(device.number() + " 200\n");
            assertThat(Files.readString(cgroup.resolve("blkio.throttle.read_bps_device")))
                    .isEqualTo(device.number() + " 10485760\n");
            assertThat(Files.readString(cgroup.resolve("blkio.throttle.write_iops_device")))
                    .isEmpty();
        }

        // a container started after the publish: the kernel's mkdir wakes whoever sets the limits
        Path started = cgroup(pod.resolve("4567ef01"));
        assertThat(calls.awaitNewCgroup(Duration.ofSeconds(30))).isTrue();
        assertThat(calls.limit(uid, device.number(), new IoLimits(200, 0, 10L << 20, 0)))
                .containsExactly(pod, container, started);
        assertThat(Files.readString(started.resolve("blkio.throttle.read_iops_device")))
                .isEqualTo(device.number() + " 200\n");

        calls.limit(uid, device.number(), IoLimits.NONE);
        for (Path cgroup : List.of(pod, container, started)) {
            assertThat(Files.readString(cgroup.resolve("blkio.throttle.read_iops_device")))
                    .as("a rule of 0 is removed")
                    .isEmpty();
            assertThat(Files.readString(cgroup.resolve("blkio.throttle.read_bps_device")))
                    .isEmpty();
        }
    }
}
