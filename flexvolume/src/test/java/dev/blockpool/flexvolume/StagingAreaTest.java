package dev.blockpool.flexvolume;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.host.mounts.DeviceNumber;
import dev.blockpool.host.mounts.MountInfo;
import dev.blockpool.host.mounts.MountTable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Which staged volume backs a pod's mount, and whether a staged volume has users, read from a mount table. */
class StagingAreaTest {

    private static final String VOLUME = "vol-0123456789abcdef0123456789abcdef";
    private static final String OTHER = "vol-fedcba9876543210fedcba9876543210";

    @TempDir
    Path dir;

    private final List<MountInfo> mounts = new ArrayList<>();
    private StagingArea area;
    private Path pods;

    @BeforeEach
    void setUp() throws Exception {
        MountTable table = () -> mounts;
        area = new StagingArea(dir.toRealPath().resolve("csi.sock"), table);
        pods = dir.toRealPath().resolve("pods");
    }

    private void mount(Path mountPoint, int minor) {
        mounts.add(new MountInfo(
                mounts.size() + 100,
                1,
                new DeviceNumber(7, minor),
                "/",
                mountPoint,
                List.of("rw"),
                List.of(),
                "ext4",
                "/dev/loop" + minor,
                List.of("rw")));
    }

    @Test
    void theStagingDirectoryIsBesideTheSocket() throws Exception {
        assertThat(area.stagingOf(VOLUME))
                .isEqualTo(dir.toRealPath().resolve("flexvolume/staging").resolve(VOLUME));
    }

    @Test
    void aPodsMountIsTracedToTheStagedVolumeOnTheSameDevice() {
        mount(area.stagingOf(OTHER), 4);
        mount(area.stagingOf(VOLUME), 5);
        mount(pods.resolve("a"), 5);

        assertThat(area.volumeMountedAt(pods.resolve("a"))).contains(VOLUME);
        assertThat(area.volumeMountedAt(pods.resolve("b"))).isEmpty();
    }

    @Test
    void aMountOfSomethingElseIsNotUnmounted() {
        mount(pods.resolve("a"), 9);

        assertThatThrownBy(() -> area.volumeMountedAt(pods.resolve("a")))
                .hasMessageContaining("is not a blockpool FlexVolume mount");
    }

    @Test
    void aStagedVolumeIsInUseWhileAnotherMountSharesItsDevice() {
        mount(area.stagingOf(VOLUME), 5);
        mount(pods.resolve("a"), 5);
        assertThat(area.inUse(VOLUME)).isTrue();

        mounts.removeLast();
        assertThat(area.inUse(VOLUME)).isFalse();
        assertThat(area.inUse(OTHER)).as("not staged").isFalse();
    }

    @Test
    void onlyDirectoriesNamedLikeVolumesAreStagedVolumes() throws Exception {
        assertThat(area.stagedVolumes()).isEmpty();
        try (var _ = area.lock()) {
            Files.createDirectories(area.stagingOf(VOLUME));
            Files.createDirectories(area.root().resolve("lost+found"));
            assertThat(area.stagedVolumes()).containsExactly(VOLUME);
            area.removeStagingDirectory(VOLUME);
            assertThat(area.stagingOf(VOLUME)).doesNotExist();
        }
    }
}
