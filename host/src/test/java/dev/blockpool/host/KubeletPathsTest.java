package dev.blockpool.host;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.StorageException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The paths the node never works on; checked as logic only, nothing is made or mounted here. */
class KubeletPathsTest {

    @TempDir
    Path dir;

    private KubeletPaths paths() throws IOException {
        return new KubeletPaths(Files.createDirectories(dir.resolve("pool")), dir.resolve("csi.sock"));
    }

    private static void assertInvalid(KubeletPaths paths, Path path) {
        assertThatThrownBy(() -> paths.check("target_path", path))
                .isInstanceOfSatisfying(
                        StorageException.class,
                        e -> assertThat(e.kind()).as(e.getMessage()).isEqualTo(StorageException.Kind.INVALID));
    }

    @ParameterizedTest
    @ValueSource(strings = {"/proc/1/root", "/proc", "/sys/kernel/x", "/dev/null", "/dev/loop0", "/dev/shm/x"})
    void kernelFilesystemsAndDevAreNeverTargets(String path) throws IOException {
        assertInvalid(paths(), Path.of(path));
    }

    @Test
    void dotDotCannotWalkIntoThem() throws IOException {
        assertInvalid(paths(), dir.resolve("../../../../../../proc/self"));
    }

    @Test
    void thePoolAndTheSocketAreNeverTargets() throws IOException {
        KubeletPaths paths = paths();
        assertInvalid(paths, dir.resolve("pool"));
        assertInvalid(paths, dir.resolve("pool/volumes/vol-x.img"));
        assertInvalid(paths, dir.resolve("csi.sock"));
        assertInvalid(paths, dir); // contains the pool
        Path link = Files.createSymbolicLink(dir.resolve("pool-link"), dir.resolve("pool"));
        assertInvalid(paths, link.resolve("volumes"));
    }

    @Test
    void kubeletsPathsPass() throws IOException {
        Path pods = Files.createDirectories(dir.resolve("kubelet/pods/uid/volumes"));
        assertThat(paths().check("target_path", pods.resolve("pvc")))
                .isEqualTo(pods.toRealPath().resolve("pvc"));
    }

    @Test
    void aPublishTargetNamesItsPod() {
        String uid = "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0";

        assertThat(KubeletPaths.podUidOf(
                        Path.of("/var/lib/kubelet/pods/" + uid + "/volumes/kubernetes.io~csi/pvc-1/mount")))
                .contains(uid);
        assertThat(KubeletPaths.podUidOf(
                        Path.of("/data/kubelet/plugins/kubernetes.io/csi/volumeDevices/publish/pvc-2/" + uid)))
                .as("a raw block publish, under another kubelet root")
                .contains(uid);
        assertThat(KubeletPaths.podUidOf(
                        Path.of("/var/lib/kubelet/plugins/kubernetes.io/csi/blockpool.csi.dev/abc/globalmount")))
                .as("a staging path")
                .isEmpty();
        assertThat(KubeletPaths.podUidOf(Path.of("/var/lib/kubelet/pods/../volumes/kubernetes.io~csi/pvc-1/mount")))
                .as("no pod UID")
                .isEmpty();
        assertThat(KubeletPaths.podUidOf(Path.of("/mount"))).isEmpty();
    }
}
