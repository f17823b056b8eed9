package dev.blockpool.common;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The allow-list of mount flags: nothing that reaches mount(2) can change what is mounted where. */
class MountOptionsTest {

    private static void invalid(Runnable call) {
        assertThatThrownBy(call::run)
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.INVALID));
    }

    @Test
    void allowListedFlagsPassSplitAndDeduplicated() {
        assertThat(MountOptions.parse(List.of("noatime,nodev", "nosuid", "noatime", " ", "defaults")))
                .containsExactly("noatime", "nodev", "nosuid");
        assertThat(MountOptions.parse(List.of("errors=remount-ro"))).containsExactly("errors=remount-ro");
        assertThat(MountOptions.parse(List.of("nouuid"))).containsExactly("nouuid");
        MountOptions.requireAllowedFor(List.of("noatime", "errors=remount-ro"), FsType.EXT4);
        MountOptions.requireAllowedFor(List.of("noatime", "nouuid"), FsType.XFS);
    }

    @Test
    void anythingElseIsInvalid() {
        invalid(() -> MountOptions.parse(List.of("bind")));
        invalid(() -> MountOptions.parse(List.of("noatime,remount")));
        invalid(() -> MountOptions.parse(List.of("loop,offset=4096")));
        invalid(() -> MountOptions.parse(List.of("ro", "rw")));
        invalid(() -> MountOptions.parse(List.of("context=\"system_u:object_r:foo\"")));
        invalid(() -> MountOptions.requireAllowedFor(List.of("nouuid"), FsType.EXT4));
        invalid(() -> MountOptions.requireAllowedFor(List.of("errors=remount-ro"), FsType.XFS));
    }

    @Test
    void flagsThatMakeAVolumeUnsafeOrPanicTheNodeAreInvalid() {
        for (String flag : List.of("errors=panic", "noload", "norecovery")) {
            invalid(() -> MountOptions.parse(List.of(flag)));
        }
    }

    @Test
    void aBindTakesOnlyPerMountFlags() {
        assertThat(MountOptions.forBind(List.of(
                        "noatime",
                        "data=journal",
                        "nodev",
                        "sync",
                        "discard",
                        "nosuid",
                        "noexec",
                        "relatime",
                        "ro",
                        "nouuid")))
                .containsExactly("noatime", "nodev", "nosuid", "noexec", "relatime");
    }
}
