package dev.blockpool.host.cgroups;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.IoLimits;
import dev.blockpool.common.StorageException;
import dev.blockpool.host.mounts.DeviceNumber;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The pod's cgroups found and their throttle files written, on cgroup trees made in a temporary
 * directory as kubelet lays them out: cgroup v1 with the cgroupfs driver below a cgroup root of
 * its own, cgroup v2 with the systemd driver.
 */
class LinuxPodCgroupCallsTest {

    private static final String UID = "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0";
    private static final DeviceNumber LOOP3 = new DeviceNumber(7, 3);
    private static final IoLimits LIMITS = new IoLimits(200, 0, 10L << 20, 20L << 20);
    private static final List<String> V1_FILES = List.of(
            "blkio.throttle.read_iops_device",
            "blkio.throttle.write_iops_device",
            "blkio.throttle.read_bps_device",
            "blkio.throttle.write_bps_device");

    @TempDir
    Path root;

    /** A cgroup v1 blkio cgroup: a directory with the four throttle files, empty. */
    private Path v1Cgroup(String path) throws IOException {
        Path cgroup = Files.createDirectories(root.resolve("blkio").resolve(path));
        for (String file : V1_FILES) {
            Files.writeString(cgroup.resolve(file), "");
        }
        return cgroup;
    }

    /** A cgroup v2 cgroup with io.max, empty. */
    private Path v2Cgroup(String path) throws IOException {
        Files.writeString(root.resolve("cgroup.controllers"), "cpu io memory pids\n");
        Path cgroup = Files.createDirectories(root.resolve(path));
        Files.writeString(cgroup.resolve("io.max"), "");
        return cgroup;
    }

    private static String read(Path file) throws IOException {
        return Files.readString(file);
    }

    private List<Path> limit(String uid, IoLimits limits) {
        return new LinuxPodCgroupCalls(root).limit(uid, LOOP3, limits);
    }

    @Test
    void cgroupV1SetsThePodAndEachOfItsContainersForV1IsNotHierarchical() throws IOException {
        Path pod = v1Cgroup("bpe2e1/kubepods/besteffort/pod" + UID);
        Path app = v1Cgroup("bpe2e1/kubepods/besteffort/pod" + UID + "/0123abcd");
        Path pause = v1Cgroup("bpe2e1/kubepods/besteffort/pod" + UID + "/4567ef01");
        Path other = v1Cgroup("bpe2e1/kubepods/besteffort/pod11111111-2222-3333-4444-555555555555/89ab");

        assertThat(limit(UID, LIMITS)).containsExactly(pod, app, pause);
        for (Path cgroup : List.of(pod, app, pause)) {
            assertThat(read(cgroup.resolve("blkio.throttle.read_iops_device"))).isEqualTo("7:3 200\n");
            assertThat(read(cgroup.resolve("blkio.throttle.read_bps_device"))).isEqualTo("7:3 10485760\n");
            assertThat(read(cgroup.resolve("blkio.throttle.write_bps_device"))).isEqualTo("7:3 20971520\n");
            assertThat(read(cgroup.resolve("blkio.throttle.write_iops_device")))
                    .as("no limit, none before: nothing written")
                    .isEmpty();
        }
        assertThat(read(other.resolve("blkio.throttle.read_iops_device"))).isEmpty();
    }

    @Test
    void cgroupV1WakesItsCallerWhenALimitedPodStartsAContainer() throws Exception {
        Path pod = v1Cgroup("kubepods/besteffort/pod" + UID);
        LinuxPodCgroupCalls cgroups = new LinuxPodCgroupCalls(root);
        assertThat(cgroups.awaitNewCgroup(Duration.ZERO))
                .as("nothing limited yet")
                .isFalse();
        cgroups.limit(UID, LOOP3, LIMITS);
        assertThat(cgroups.awaitNewCgroup(Duration.ZERO))
                .as("no container started")
                .isFalse();

        Path started = v1Cgroup("kubepods/besteffort/pod" + UID + "/89abcdef");

        assertThat(cgroups.awaitNewCgroup(Duration.ofSeconds(30))).isTrue();
        assertThat(cgroups.limit(UID, LOOP3, LIMITS)).containsExactly(pod, started);
        assertThat(read(started.resolve("blkio.throttle.read_iops_device"))).isEqualTo("7:3 200\n");
        assertThat(cgroups.awaitNewCgroup(Duration.ZERO))
                .as("each new cgroup wakes once")
                .isFalse();
    }

    @Test
    void cgroupV1LiftsALimitWithZeroAndLeavesARuleAsAskedUnwritten() throws IOException {
        Path pod = v1Cgroup("kubepods/pod" + UID);
        // as the kernel lists them: this device's rule beside another device's
        Files.writeString(pod.resolve("blkio.throttle.read_iops_device"), "7:3 200\n8:0 5\n");
        Files.writeString(pod.resolve("blkio.throttle.write_iops_device"), "8:0 5\n7:3 100\n");

        limit(UID, new IoLimits(200, 0, 0, 0));

        assertThat(read(pod.resolve("blkio.throttle.read_iops_device")))
                .as("already as asked: not written again")
                .isEqualTo("7:3 200\n8:0 5\n");
        assertThat(read(pod.resolve("blkio.throttle.write_iops_device"))).isEqualTo("7:3 0\n");
    }

    @Test
    void cgroupV2SetsThePodsIoMaxAloneForV2IsHierarchical() throws IOException {
        String slice =
                "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + UID.replace('-', '_') + ".slice";
        Path pod = v2Cgroup(slice);
        Path container = v2Cgroup(slice + "/cri-containerd-0123abcd.scope");

        assertThat(limit(UID, LIMITS)).containsExactly(pod);
        assertThat(read(pod.resolve("io.max"))).isEqualTo("7:3 rbps=10485760 wbps=20971520 riops=200 wiops=max\n");
        assertThat(read(container.resolve("io.max"))).isEmpty();

        Files.writeString(
                pod.resolve("io.max"),
                "7:3 rbps=10485760 wbps=20971520 riops=200 wiops=max\n8:0 rbps=1 wbps=max riops=max wiops=max\n");
        limit(UID, LIMITS);
        assertThat(read(pod.resolve("io.max")))
                .as("already as asked: not written again")
                .contains("8:0");

        limit(UID, IoLimits.NONE);
        assertThat(read(pod.resolve("io.max"))).isEqualTo("7:3 rbps=max wbps=max riops=max wiops=max\n");
    }

    @Test
    void cgroupV2WithoutTheIoControllerForPodsIsAPrecondition() throws IOException {
        Path pod = v2Cgroup("kubepods/pod" + UID);
        Files.delete(pod.resolve("io.max"));

        assertThatThrownBy(() -> limit(UID, LIMITS))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.PRECONDITION))
                .hasMessageContaining("has no io.max: the io controller is not enabled for pods");
    }

    @Test
    void aPodsCgroupFoundBeforeIsLookedForAgainOnceItIsGone() throws IOException {
        LinuxPodCgroupCalls calls = new LinuxPodCgroupCalls(root);
        Path before = v1Cgroup("kubepods/besteffort/pod" + UID);
        assertThat(calls.limit(UID, LOOP3, LIMITS)).containsExactly(before);

        for (String file : V1_FILES) {
            Files.delete(before.resolve(file));
        }
        Files.delete(before);
        Path now = v1Cgroup("kubepods/burstable/pod" + UID);
        assertThat(calls.limit(UID, LOOP3, LIMITS)).containsExactly(now);
        assertThat(read(now.resolve("blkio.throttle.read_iops_device"))).isEqualTo("7:3 200\n");
    }

    @Test
    void aPodWithoutACgroupHereHasNothingSet() throws IOException {
        v1Cgroup("kubepods/burstable");

        assertThat(limit(UID, LIMITS)).isEmpty();
    }

    @Test
    void aSymlinkIsNeverFollowedToAPodsCgroup() throws IOException {
        Path elsewhere = Files.createDirectories(root.resolve("elsewhere/pod" + UID));
        Files.writeString(elsewhere.resolve("blkio.throttle.read_iops_device"), "");
        v1Cgroup("kubepods/besteffort");
        Files.createSymbolicLink(root.resolve("blkio/kubepods/besteffort/pod" + UID), elsewhere);
        Files.createSymbolicLink(root.resolve("blkio/kubepods/linked"), root.resolve("elsewhere"));

        assertThat(limit(UID, LIMITS)).isEmpty();
        assertThat(read(elsewhere.resolve("blkio.throttle.read_iops_device"))).isEmpty();
    }

    @Test
    void aThrottleFileThatIsASymlinkIsRefused() throws IOException {
        Path pod = v1Cgroup("kubepods/pod" + UID);
        Path elsewhere = Files.writeString(root.resolve("elsewhere"), "");
        Files.delete(pod.resolve("blkio.throttle.read_iops_device"));
        Files.createSymbolicLink(pod.resolve("blkio.throttle.read_iops_device"), elsewhere);

        assertThatThrownBy(() -> limit(UID, LIMITS)).hasMessageContaining("symbolic link");
        assertThat(read(elsewhere)).isEmpty();
    }

    @Test
    void aPodDeeperThanKubeletPutsOneIsNotLookedFor() throws IOException {
        v1Cgroup("a/b/c/d/e/f/pod" + UID);

        assertThat(limit(UID, LIMITS)).isEmpty();
    }

    @Test
    void withoutAHierarchyOfTheIoControllerALimitIsAPreconditionAndNoLimitIsNothing() {
        assertThatThrownBy(() -> limit(UID, LIMITS))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.PRECONDITION))
                .hasMessageContaining("no cgroup hierarchy of the I/O controller at " + root)
                .hasMessageContaining("the host's /sys/fs/cgroup");
        assertThat(limit(UID, IoLimits.NONE))
                .as("nothing to lift where nothing could be set")
                .isEmpty();
    }

    @Test
    void onlyAPodUidNamesACgroup() {
        assertThat(LinuxPodCgroupCalls.isPodUid(UID)).isTrue();
        assertThat(LinuxPodCgroupCalls.isPodUid("0b1c2d3e4f5061728394a5b6c7d8e9f0"))
                .as("a static pod's")
                .isTrue();
        for (String notOne : List.of("", "..", "*", UID + "/..", UID.toUpperCase(), "pod" + UID)) {
            assertThat(LinuxPodCgroupCalls.isPodUid(notOne)).as(notOne).isFalse();
        }
        assertThatThrownBy(() -> limit("../x", LIMITS)).isInstanceOf(IllegalArgumentException.class);
    }
}
