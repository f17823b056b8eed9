package dev.blockpool.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.CsiException;
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
        assertThat(MountOptions.validate(List.of("noatime,nodev", "nosuid", "noatime", " ", "defaults"), "ext4"))
                .containsExactly("noatime", "nodev", "nosuid");
        assertThat(MountOptions.validate(List.of("errors=remount-ro"), "ext4")).containsExactly("errors=remount-ro");
        assertThat(MountOptions.validate(List.of("nouuid"), "xfs")).containsExactly("nouuid");
    }

    @Test
    void anythingElseIsInvalid() {
        invalid(() -> MountOptions.validate(List.of("bind"), "ext4"));
        invalid(() -> MountOptions.validate(List.of("noatime,remount"), "ext4"));
        invalid(() -> MountOptions.validate(List.of("loop,offset=4096"), ""));
        invalid(() -> MountOptions.validate(List.of("nouuid"), "ext4"));
        invalid(() -> MountOptions.validate(List.of("errors=remount-ro"), "xfs"));
        invalid(() -> MountOptions.validate(List.of("ro", "rw"), "ext4"));
        invalid(() -> MountOptions.validate(List.of("context=\"system_u:object_r:foo\""), "ext4"));
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
