package dev.blockpool.host.mounts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.FsType;
import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntSupplier;
import org.junit.jupiter.api.Test;

/** What the mounter asks of the kernel, and how it believes results only when the mount table agrees. */
class HostMounterTest {

    private static final Path TARGET = Path.of("/var/lib/kubelet/pods/p/volumes/v");

    private final List<MountInfo> mounts = new ArrayList<>(List.of(new MountInfo(
            40,
            1,
            new DeviceNumber(7, 3),
            "/",
            TARGET,
            List.of("rw"),
            List.of(),
            "ext4",
            "/dev/loop3",
            List.of("rw"))));
    private final MountTable table = () -> List.copyOf(mounts);
    private final List<String> calls = new ArrayList<>();

    /** Kernel calls that are recorded; unmount answers what {@code unmountResult} says. */
    private MountCalls kernel(IntSupplier unmountResult) {
        return kernel(unmountResult, false);
    }

    /** {@code newMountApi}: the kernel has open_tree, mount_setattr and move_mount. */
    private MountCalls kernel(IntSupplier unmountResult, boolean newMountApi) {
        return new MountCalls() {
            @Override
            public boolean atomicBinds() {
                return newMountApi;
            }

            @Override
            public void bindWithFlags(String source, Path target, TargetKind kind, long flags) {
                calls.add("bind %s %s %s flags=%d".formatted(source, target, kind, flags));
            }

            @Override
            public void mount(String source, Path target, TargetKind kind, String type, long flags, String data) {
                calls.add("mount %s %s %s %s flags=%d data=%s".formatted(source, target, kind, type, flags, data));
            }

            @Override
            public void remountBind(Path target, TargetKind kind, long flags) {
                calls.add("remount %s %s flags=%d".formatted(target, kind, flags));
            }

            @Override
            public int unmount(Path target, boolean detach) {
                calls.add((detach ? "umount --lazy " : "umount ") + target);
                return unmountResult.getAsInt();
            }
        };
    }

    private static void assertInternal(Runnable call, String messagePart) {
        assertThatThrownBy(call::run).isInstanceOfSatisfying(StorageException.class, e -> {
            assertThat(e.kind()).isEqualTo(StorageException.Kind.INTERNAL);
            assertThat(e.getMessage()).contains(messagePart);
        });
    }

    @Test
    void optionsBecomeFlagsAndFilesystemData() {
        new HostMounter(kernel(() -> 0), table)
                .mount(
                        Path.of("/dev/loop3"),
                        TARGET,
                        FsType.EXT4,
                        List.of("ro", "noatime", "errors=remount-ro", "nodev"));
        long flags = MountSyscalls.MS_RDONLY | MountSyscalls.MS_NOATIME | MountSyscalls.MS_NODEV;
        assertThat(calls)
                .containsExactly(
                        "mount /dev/loop3 " + TARGET + " DIRECTORY ext4 flags=" + flags + " data=errors=remount-ro");
    }

    @Test
    void aReadOnlyBindIsABindThenARemount() {
        new HostMounter(kernel(() -> 0), table).bind(Path.of("/no/such/staging"), TARGET, true, List.of("nosuid"));
        assertThat(calls)
                .containsExactly(
                        "mount /no/such/staging " + TARGET + " FILE null flags=" + MountSyscalls.MS_BIND + " data=null",
                        "remount " + TARGET + " FILE flags=" + (MountSyscalls.MS_NOSUID | MountSyscalls.MS_RDONLY));
    }

    @Test
    void aReadOnlyBindIsOneStepWhereTheKernelHasTheNewMountApi() {
        HostMounter mounter = new HostMounter(kernel(() -> 0, true), table);
        assertThat(mounter.bindsAtomically()).isTrue();
        mounter.bind(Path.of("/no/such/staging"), TARGET, true, List.of("nosuid"));
        mounter.bind(Path.of("/no/such/staging"), TARGET, false, List.of());
        assertThat(calls)
                .containsExactly(
                        "bind /no/such/staging " + TARGET + " FILE flags="
                                + (MountSyscalls.MS_NOSUID | MountSyscalls.MS_RDONLY),
                        "mount /no/such/staging " + TARGET + " FILE null flags=" + MountSyscalls.MS_BIND
                                + " data=null");
    }

    @Test
    void theMountFlagsBecomeTheNewMountApisAttributes() {
        assertThat(LinuxMountCalls.attributes(MountSyscalls.MS_RDONLY
                        | MountSyscalls.MS_NOSUID
                        | MountSyscalls.MS_NODEV
                        | MountSyscalls.MS_NOEXEC))
                .isEqualTo(MountSyscalls.MOUNT_ATTR_RDONLY
                        | MountSyscalls.MOUNT_ATTR_NOSUID
                        | MountSyscalls.MOUNT_ATTR_NODEV
                        | MountSyscalls.MOUNT_ATTR_NOEXEC);
        assertThat(LinuxMountCalls.attributes(MountSyscalls.MS_NOATIME | MountSyscalls.MS_NODIRATIME))
                .isEqualTo(MountSyscalls.MOUNT_ATTR_NOATIME | MountSyscalls.MOUNT_ATTR_NODIRATIME);
        assertThat(LinuxMountCalls.attributes(MountSyscalls.MS_STRICTATIME))
                .isEqualTo(MountSyscalls.MOUNT_ATTR_STRICTATIME);
    }

    @Test
    void aMountBusyForLongerThanTheRetriesIsBusyAndNeverLazilyDetachedWhenHealthy() {
        HostMounter mounter = new HostMounter(kernel(() -> Libc.EBUSY), table, Duration.ofMillis(200));
        assertThatThrownBy(() -> mounter.unmount(mounts.getFirst(), false))
                .isInstanceOfSatisfying(StorageException.class, e -> {
                    assertThat(e.kind()).isEqualTo(StorageException.Kind.BUSY);
                    assertThat(e.getMessage()).contains("target is busy");
                });
        assertThat(calls).hasSizeGreaterThan(2).allMatch(("umount " + TARGET)::equals);
        assertThat(mounts).hasSize(1);
    }

    @Test
    void aMountBusyForAMomentIsUnmountedOnceFree() {
        HostMounter mounter = new HostMounter(
                kernel(() -> {
                    if (calls.size() < 3) {
                        return Libc.EBUSY; // a reader in the target, for the first two tries
                    }
                    mounts.clear();
                    return 0;
                }),
                table,
                Duration.ofSeconds(5));
        assertThat(mounter.unmount(mounts.getFirst(), false)).isEmpty();
        assertThat(calls).containsExactly("umount " + TARGET, "umount " + TARGET, "umount " + TARGET);
    }

    @Test
    void aCorruptedMountThatCannotBeUnmountedIsLazilyDetached() {
        HostMounter mounter = new HostMounter(
                kernel(() -> {
                    if (calls.getLast().contains("--lazy")) {
                        mounts.clear();
                        return 0;
                    }
                    return Libc.EINVAL;
                }),
                table);
        assertThat(mounter.unmount(mounts.getFirst(), true)).isEmpty();
        assertThat(calls).containsExactly("umount " + TARGET, "umount --lazy " + TARGET);
        assertThat(mounts).isEmpty();
    }

    @Test
    void aSuccessfulUnmountWhoseMountIsStillThereIsAnError() {
        assertInternal(
                () -> new HostMounter(kernel(() -> 0), table).unmount(mounts.getFirst(), false), "still mounted");
        assertThat(calls).containsExactly("umount " + TARGET);
    }

    @Test
    void whatIsLeftMountedBelowIsAnswered() {
        MountInfo below = mounts.getFirst();
        MountInfo top = new MountInfo(
                41,
                1,
                new DeviceNumber(7, 4),
                "/",
                TARGET,
                List.of("rw"),
                List.of(),
                "ext4",
                "/dev/loop4",
                List.of("rw"));
        mounts.add(top);
        HostMounter mounter = new HostMounter(
                kernel(() -> {
                    mounts.remove(top);
                    return 0;
                }),
                table);
        assertThat(mounter.unmount(top, false)).containsExactly(below);
    }

    @Test
    void theOnlyMountAtAPathTakenByUmountLeavesNothingWithoutAnotherReadOfTheTable() {
        MountTable unread = () -> {
            throw new AssertionError("the table is not read again");
        };
        assertThat(new HostMounter(kernel(() -> 0), unread).unmountTop(List.copyOf(mounts), false))
                .isEmpty();
        assertThat(calls).containsExactly("umount " + TARGET);
        // umount2 failed, or another mount lay below: the table tells what is left
        assertInternal(
                () -> new HostMounter(kernel(() -> 0), table)
                        .unmountTop(List.of(mounts.getFirst(), mounts.getFirst()), false),
                "still mounted");
        assertThatThrownBy(() -> new HostMounter(kernel(() -> Libc.EBUSY), table, Duration.ZERO)
                        .unmountTop(List.copyOf(mounts), false))
                .hasMessageContaining("target is busy");
    }
}
