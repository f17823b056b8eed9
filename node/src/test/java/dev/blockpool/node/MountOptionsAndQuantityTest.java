package dev.blockpool.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.CsiException;
import dev.blockpool.node.host.FsType;
import io.grpc.Status;
import java.util.List;
import org.junit.jupiter.api.Test;

class MountOptionsAndQuantityTest {

    private static void invalid(Runnable call) {
        assertThatThrownBy(call::run).isInstanceOfSatisfying(CsiException.class,
                e -> assertThat(e.code()).isEqualTo(Status.Code.INVALID_ARGUMENT));
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
        assertThat(MountOptions.forBind(List.of("noatime", "data=journal", "nodev", "sync", "discard", "nosuid",
                "noexec", "relatime", "ro", "nouuid"))).containsExactly("noatime", "nodev", "nosuid", "noexec",
                "relatime");
    }

    @Test
    void kubernetesQuantities() {
        assertThat(Quantity.parseBytes("size", "1Gi")).isEqualTo(1L << 30);
        assertThat(Quantity.parseBytes("size", "512Mi")).isEqualTo(512L << 20);
        assertThat(Quantity.parseBytes("size", "2G")).isEqualTo(2_000_000_000L);
        assertThat(Quantity.parseBytes("size", "100k")).isEqualTo(100_000L);
        assertThat(Quantity.parseBytes("size", "4096")).isEqualTo(4096L);
        invalid(() -> Quantity.parseBytes("size", "1.5Gi"));
        invalid(() -> Quantity.parseBytes("size", "-1Gi"));
        invalid(() -> Quantity.parseBytes("size", "lots"));
        assertThatThrownBy(() -> Quantity.parseBytes("size", "99999999999Pi")).isInstanceOfSatisfying(
                CsiException.class, e -> assertThat(e.code()).isEqualTo(Status.Code.OUT_OF_RANGE));
    }
}
