package dev.blockpool.host;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.FilesystemAnswer;
import dev.blockpool.common.FsType;
import dev.blockpool.common.GrowthMarker;
import dev.blockpool.common.HealthProblem;
import dev.blockpool.common.StorageException;
import dev.blockpool.common.StorageException.Kind;
import dev.blockpool.host.filesystems.FilesystemRequest;
import dev.blockpool.host.filesystems.Filesystems;
import dev.blockpool.host.filesystems.Probe;
import dev.blockpool.host.loops.LoopAttachments;
import dev.blockpool.host.loops.LoopDevice;
import dev.blockpool.host.mounts.DeviceNumber;
import dev.blockpool.host.mounts.MountInfo;
import dev.blockpool.host.mounts.MountTable;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The node's decisions — format or not, fsck or not, reuse or attach, refuse — on a fake host. */
class NodeHostTest {

    @TempDir
    Path dir;

    private FakeHost fake;
    private NodeHost host;
    private Path image;
    private Path staging;

    @BeforeEach
    void setUp() throws IOException {
        fake = new FakeHost(dir.resolve("dev"));
        host = fake.nodeHost();
        image = Files.createFile(dir.resolve("vol-a.img"));
        staging = dir.resolve("staging");
    }

    private static FilesystemRequest ext4(boolean readOnly) {
        return new FilesystemRequest(Optional.empty(), FsType.EXT4, List.of("noatime"), readOnly);
    }

    private static void assertCode(Runnable call, Kind kind) {
        assertThatThrownBy(call::run)
                .isInstanceOfSatisfying(
                        StorageException.class,
                        e -> assertThat(e.kind()).as(e.getMessage()).isEqualTo(kind));
    }

    @Test
    void formatsAnEmptyDeviceOnceAndChecksItOnEveryLaterReadWriteStage() {
        host.staging().stageFilesystem(image, staging, ext4(false));
        host.staging().stageFilesystem(image, staging, ext4(false)); // repeated: already mounted, nothing to do
        assertThat(fake.log).containsExactly("attach vol-a.img", "format loop0 ext4", "mount loop0 ext4 [noatime]");

        host.staging().unstage(image, staging);
        fake.log.clear();
        host.staging().stageFilesystem(image, staging, ext4(false));
        assertThat(fake.log).containsExactly("attach vol-a.img", "check loop0 ext4", "mount loop0 ext4 [noatime]");
    }

    @Test
    void neverFormatsAPartitionTableOrAForeignSignature() {
        fake.attach(image, false);
        fake.log.clear();
        Path device = dir.resolve("dev/loop0");
        fake.content.put(device, new Probe(Optional.empty(), Optional.empty(), Optional.of("gpt")));
        assertCode(() -> host.staging().stageFilesystem(image, staging, ext4(false)), Kind.PRECONDITION);
        fake.content.put(device, new Probe(Optional.of("LVM2_member"), Optional.of("raid"), Optional.empty()));
        assertCode(() -> host.staging().stageFilesystem(image, staging, ext4(false)), Kind.PRECONDITION);
        assertThat(fake.log).noneMatch(s -> s.startsWith("format") || s.startsWith("mount"));
    }

    @Test
    void aVolumeIsStagedAtOnePathOnlyAndNeverCheckedWhileMounted() {
        host.staging().stageFilesystem(image, staging, ext4(false));
        fake.log.clear();
        assertCode(
                () -> host.staging().stageFilesystem(image, dir.resolve("second-staging"), ext4(false)),
                Kind.PRECONDITION);
        assertThat(fake.log).isEmpty();
    }

    @Test
    void mountsWhatIsThereUnlessAnotherTypeWasAskedFor() {
        fake.attach(image, false);
        fake.content.put(
                dir.resolve("dev/loop0"), new Probe(Optional.of("xfs"), Optional.of("filesystem"), Optional.empty()));
        assertCode(
                () -> host.staging()
                        .stageFilesystem(
                                image,
                                staging,
                                new FilesystemRequest(Optional.of(FsType.EXT4), FsType.EXT4, List.of(), false)),
                Kind.PRECONDITION);
        host.staging().stageFilesystem(image, staging, ext4(false));
        assertThat(fake.mounts).singleElement().extracting(MountInfo::fsType).isEqualTo("xfs");
    }

    @Test
    void readOnlyStageNeitherFormatsNorChecks() {
        assertCode(() -> host.staging().stageFilesystem(image, staging, ext4(true)), Kind.PRECONDITION);
        assertThat(fake.loops)
                .as("the device attached for the failed stage is detached again")
                .isEmpty();

        fake.attach(image, true);
        fake.content.put(dir.resolve("dev/loop0"), new Probe(Optional.of("ext4"), Optional.empty(), Optional.empty()));
        fake.log.clear();
        host.staging().stageFilesystem(image, staging, ext4(true));
        assertThat(fake.log).containsExactly("mount loop0 ext4 [noatime, ro]");
        assertCode(() -> host.staging().stageFilesystem(image, staging, ext4(false)), Kind.CONFLICT);
    }

    @Test
    void aReadOnlyStageRefusesAGrowthCutShortThatOnlyAReadWriteOneRepairs() throws IOException {
        fake.content.put(dir.resolve("dev/loop0"), new Probe(Optional.of("ext4"), Optional.empty(), Optional.empty()));
        Files.createFile(GrowthMarker.beside(image));

        assertCode(() -> host.staging().stageFilesystem(image, staging, ext4(true)), Kind.PRECONDITION);
        assertThat(fake.mounts).isEmpty();
        assertThat(fake.loops)
                .as("the device attached for the refused stage is detached again")
                .isEmpty();

        host.staging().stageFilesystem(image, staging, ext4(false));
        assertThat(fake.log).contains("check loop0 ext4", "mount loop0 ext4 [noatime]");
    }

    @Test
    void anotherVolumeAtThePathIsRefused() throws IOException {
        Path other = Files.createFile(dir.resolve("vol-b.img"));
        host.staging().stageFilesystem(other, staging, ext4(false));
        assertCode(() -> host.staging().stageFilesystem(image, staging, ext4(false)), Kind.CONFLICT);
        assertCode(() -> host.staging().stageBlock(image, staging, false), Kind.CONFLICT);
        assertCode(() -> host.staging().unstage(image, staging), Kind.PRECONDITION);
        assertCode(() -> host.publishing().unpublish(image, staging), Kind.PRECONDITION);
        assertThat(fake.mounts).hasSize(1);
    }

    @Test
    void aReadOnlyPublishAKillLeftReadWriteIsRepairedByItsRepeatWhereBindsAreTwoSteps() {
        fake.atomicBinds = false;
        host.staging().stageFilesystem(image, staging, ext4(false));
        Path pod = dir.resolve("pods/a/mount");
        fake.bind(staging, pod, false, List.of()); // the bind's first step; killed before its remount
        host.publishing().publishFilesystem(image, staging, pod, true, List.of("nosuid"), false);
        assertThat(fake.at(pod).orElseThrow().readOnly()).isTrue();
        assertThat(fake.log).endsWith("set flags mount ro [nosuid]");
        host.publishing().publishFilesystem(image, staging, pod, true, List.of(), false); // and again: as asked
        assertThat(fake.at(pod).orElseThrow().readOnly()).isTrue();
        assertCode(
                () -> host.publishing().publishFilesystem(image, staging, pod, false, List.of(), false), Kind.CONFLICT);
    }

    @Test
    void whereBindsAreOneStepAReadWriteBindWhereReadOnlyIsAskedIsAnotherPublishs() {
        host.staging().stageFilesystem(image, staging, ext4(false));
        Path pod = dir.resolve("pods/a/mount");
        host.publishing().publishFilesystem(image, staging, pod, false, List.of(), false);
        assertCode(
                () -> host.publishing().publishFilesystem(image, staging, pod, true, List.of(), false), Kind.CONFLICT);
        assertThat(fake.at(pod).orElseThrow().readOnly()).isFalse();
    }

    @Test
    void publishBindsTheStagedMountAndEnforcesSingleWriter() {
        Path a = dir.resolve("pods/a/mount");
        Path b = dir.resolve("pods/b/mount");
        assertCode(
                () -> host.publishing().publishFilesystem(image, staging, a, false, List.of(), true),
                Kind.PRECONDITION);
        host.staging().stageFilesystem(image, staging, ext4(false));
        host.publishing().publishFilesystem(image, staging, a, false, List.of(), true);
        host.publishing().publishFilesystem(image, staging, a, false, List.of(), true);
        assertCode(
                () -> host.publishing().publishFilesystem(image, staging, b, false, List.of(), true),
                Kind.PRECONDITION);
        assertCode(() -> host.publishing().publishFilesystem(image, staging, a, true, List.of(), true), Kind.CONFLICT);
        host.publishing().publishFilesystem(image, staging, b, true, List.of(), false);
        assertThat(fake.log.stream().filter(s -> s.startsWith("bind"))).containsExactly("bind mount", "bind mount ro");

        assertCode(() -> host.staging().unstage(image, staging), Kind.PRECONDITION);
        host.publishing().unpublish(image, a);
        host.publishing().unpublish(image, b);
        host.publishing().unpublish(image, b);
        assertThat(a).doesNotExist();
        host.staging().unstage(image, staging);
        host.staging().unstage(image, staging);
        assertThat(fake.mounts).isEmpty();
        assertThat(fake.loops).isEmpty();
    }

    @Test
    void aMountWhoseLoopDeviceIsGoneIsBrokenAndStillUnmounted() throws IOException {
        Files.createDirectories(staging);
        fake.mounts.add(new MountInfo(
                5,
                1,
                new DeviceNumber(7, 9),
                "/",
                staging,
                List.of("rw"),
                List.of(),
                "ext4",
                "/dev/loop9",
                List.of("rw")));
        assertThat(host.stats().usage(image, staging))
                .get()
                .satisfies(u -> assertThat(u.filesystem()).isEmpty());
        assertThat(host.health().problems(image, List.of(staging)))
                .singleElement()
                .satisfies(p -> assertThat(p.reason()).isEqualTo("LoopDeviceDetached"));
        host.staging().unstage(image, staging);
        assertThat(fake.mounts).isEmpty();
    }

    /**
     * The real conditions are caused in the node's VolumeHealthRealHostTest; here, how each is worded, once per device.
     */
    @Test
    void aVolumesFilesystemIsAskedOncePerDeviceAndEachAnswerIsAProblem() {
        host.staging().stageFilesystem(image, staging, ext4(false));
        Path pod = dir.resolve("pod");
        host.publishing().publishFilesystem(image, staging, pod, false, List.of(), false);
        assertThat(host.health().problems(image, List.of(pod))).isEmpty();

        fake.answers.put(staging, new FilesystemAnswer.Silent());
        assertThat(host.health().problems(image, List.of(pod))).singleElement().satisfies(p -> {
            assertThat(p.severity()).isEqualTo(HealthProblem.Severity.INACCESSIBLE);
            assertThat(p.reason()).isEqualTo("FilesystemNotResponding");
            assertThat(p.message()).contains("does not answer within 5 s");
        });
        fake.answers.put(staging, new FilesystemAnswer.Failed(5, "Input/output error"));
        assertThat(host.health().problems(image, List.of(pod)))
                .singleElement()
                .satisfies(p -> assertThat(p.reason()).isEqualTo("FilesystemFailed"));
        fake.answers.clear();
        String device = fake.loops.keySet().iterator().next();
        fake.errors.put(device, new Filesystems.RecordedErrors(2, Optional.empty(), ""));
        assertThat(host.health().problems(image, List.of(pod))).singleElement().satisfies(p -> {
            assertThat(p.severity()).isEqualTo(HealthProblem.Severity.DEGRADED);
            assertThat(p.message()).contains("2 error(s)", "e2fsck -p").doesNotContain(" in :");
        });
    }

    /**
     * A health look that read the mount table before an unpublish took its mount and released
     * its device (a read-only raw block copy, detaching itself) reports nothing for that mount;
     * a mount still there on a device going away is reported.
     */
    @Test
    void aMountUnmountedSinceTheTableWasReadIsNoProblem() {
        host.staging().stageFilesystem(image, staging, ext4(false));
        Path pod = dir.resolve("pod");
        host.publishing().publishFilesystem(image, staging, pod, false, List.of(), false);
        List<MountInfo> before = fake.mounts();
        host.publishing().unpublish(image, pod);
        flagEveryDevice(LoopDevice.Flag.AUTOCLEAR);
        MountTable readBefore = new MountTable() {
            @Override
            public List<MountInfo> mounts() {
                return before;
            }

            @Override
            public List<MountInfo> allAt(Path... mountPoints) {
                return fake.allAt(mountPoints);
            }
        };
        MountHealth health = new MountHealth(new LoopAttachments(fake, readBefore), readBefore, fake);
        assertThat(health.problems(image, List.of()))
                .singleElement()
                .satisfies(p -> assertThat(p.message()).contains("in use at " + staging));
    }

    /** Gives every fake device these flags alone, as the kernel would show them. */
    private void flagEveryDevice(LoopDevice.Flag... flags) {
        fake.loops.replaceAll((name, l) -> new LoopDevice(
                l.name(), l.device(), l.number(), l.backingFile(), l.backingFileId(), Set.of(flags), l.sizeBytes()));
    }

    /** What DeleteVolume on a node-local pool asks: whether the volume is staged or published here. */
    @Test
    void aStagedOrPublishedImageIsHeldByItsDeviceAndItsMounts() {
        assertThat(host.loops().holders(image)).isEmpty();
        host.staging().stageFilesystem(image, staging, ext4(false));
        Path pod = dir.resolve("pod");
        host.publishing().publishFilesystem(image, staging, pod, false, List.of(), false);
        assertThat(host.loops().holders(image)).get().satisfies(held -> {
            assertThat(held.devices()).extracting(LoopDevice::name).containsExactly("loop0");
            assertThat(held.mountPoints()).containsExactlyInAnyOrder(staging, pod);
            assertThat(held.describe()).contains(dir.resolve("dev/loop0").toString(), staging.toString());
        });
        host.publishing().unpublish(image, pod);
        assertThat(host.loops().holders(image))
                .get()
                .satisfies(held -> assertThat(held.mountPoints()).containsExactly(staging));
        host.staging().unstage(image, staging);
        assertThat(host.loops().holders(image)).isEmpty();
    }

    @Test
    void aStagedRawBlockImageIsHeldByItsDeviceAlone() {
        host.staging().stageBlock(image, staging, false);
        assertThat(host.loops().holders(image)).get().satisfies(held -> {
            assertThat(held.mountPoints()).isEmpty();
            assertThat(held.describe()).endsWith("loop0, mounted nowhere");
        });
    }

    /**
     * A device detaching itself holds the image only while it is mounted here: kept open by a
     * process or another namespace's copy of a mount alone, an unstage leaves it as it is too.
     */
    @Test
    void aDeviceDetachingItselfHoldsTheImageOnlyWhileMountedHere() {
        host.staging().stageFilesystem(image, staging, ext4(false));
        flagEveryDevice(LoopDevice.Flag.AUTOCLEAR);
        assertThat(host.loops().holders(image))
                .get()
                .satisfies(held -> assertThat(held.mountPoints()).containsExactly(staging));
        fake.mounts.clear();
        assertThat(host.loops().holders(image)).isEmpty();
    }

    /** A device still bound to a former image of the name, deleted, does not hold the image there now. */
    @Test
    void aDeviceOfADeletedImageOfTheSameNameDoesNotHoldTheImage() {
        host.staging().stageBlock(image, staging, false);
        flagEveryDevice(LoopDevice.Flag.BACKING_FILE_DELETED);
        assertThat(host.loops().holders(image)).isEmpty();
    }

    @Test
    void neverAttachesASecondDeviceWhileADetachedOneStillHoldsTheImage() {
        host.staging().stageFilesystem(image, staging, ext4(false));
        host.publishing().unpublish(image, staging); // as an administrator's umount would
        flagEveryDevice(LoopDevice.Flag.AUTOCLEAR); // losetup -d while still open elsewhere
        assertCode(() -> host.staging().stageFilesystem(image, staging, ext4(false)), Kind.PRECONDITION);
        assertThat(fake.loops).hasSize(1);
    }

    @Test
    void expansionRefreshesTheDeviceThenGrowsTheMountedFilesystem() throws IOException {
        assertCode(() -> host.resizer().expand(image, staging, false), Kind.NOT_FOUND);
        host.staging().stageFilesystem(image, staging, ext4(false));
        try (var file = new java.io.RandomAccessFile(image.toFile(), "rw")) {
            file.setLength(3L << 30); // the controller grew the image
        }
        fake.log.clear();
        assertThat(host.resizer().expand(image, staging, false)).isEqualTo(3L << 30);
        assertThat(fake.log).containsExactly("refresh loop0", "grow loop0 ext4");
        assertThat(fake.loops.get("loop0").sizeBytes()).isEqualTo(3L << 30);
    }

    @Test
    void anExt4TheKernelWillNotGrowOnlineGrowsAtTheNextStage() throws IOException {
        fake.ext4OnlineGrowthRefused = true;
        host.staging().stageFilesystem(image, staging, ext4(false));
        try (var file = new java.io.RandomAccessFile(image.toFile(), "rw")) {
            file.setLength(3L << 30); // the controller grew the image
        }
        fake.log.clear();
        assertThatThrownBy(() -> host.resizer().expand(image, staging, false))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(Kind.PRECONDITION))
                .hasMessageContaining("CAP_SYS_RESOURCE")
                .hasMessageContaining("grows to the volume's " + (3L << 30) + " bytes at its next NodeStageVolume");
        assertThat(fake.log).containsExactly("refresh loop0", "grow refused loop0 ext4");

        host.staging().unstage(image, staging);
        fake.log.clear();
        host.staging().stageFilesystem(image, staging, ext4(false));
        assertThat(fake.log)
                .containsExactly(
                        "attach vol-a.img",
                        "check loop0 ext4",
                        "grow unmounted loop0 ext4",
                        "mount loop0 ext4 [noatime]");
        host.staging().unstage(image, staging);
        fake.log.clear();
        host.staging().stageFilesystem(image, staging, ext4(false)); // grown already: only checked
        assertThat(fake.log).containsExactly("attach vol-a.img", "check loop0 ext4", "mount loop0 ext4 [noatime]");
    }

    @Test
    void expansionNeedsAMountOfTheVolumeAtThePath() throws IOException {
        Path other = Files.createFile(dir.resolve("vol-b.img"));
        Path otherStaging = dir.resolve("other-staging");
        host.staging().stageFilesystem(image, staging, ext4(false));
        host.staging().stageFilesystem(other, otherStaging, ext4(false));
        fake.log.clear();
        assertCode(() -> host.resizer().expand(image, otherStaging, false), Kind.NOT_FOUND);
        assertCode(() -> host.resizer().expand(image, dir, false), Kind.NOT_FOUND);
        host.staging().unstage(image, staging);
        fake.log.clear();
        assertCode(() -> host.resizer().expand(image, staging, false), Kind.NOT_FOUND);
        assertThat(fake.log).isEmpty();
    }
}
