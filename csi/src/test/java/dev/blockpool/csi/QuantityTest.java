package dev.blockpool.csi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Status;
import org.junit.jupiter.api.Test;

class QuantityTest {

    private static void invalid(Runnable call) {
        assertThatThrownBy(call::run)
                .isInstanceOfSatisfying(
                        CsiException.class, e -> assertThat(e.code()).isEqualTo(Status.Code.INVALID_ARGUMENT));
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
        assertThatThrownBy(() -> Quantity.parseBytes("size", "99999999999Pi"))
                .isInstanceOfSatisfying(
                        CsiException.class, e -> assertThat(e.code()).isEqualTo(Status.Code.OUT_OF_RANGE));
    }

    @Test
    void aSizeAboveTheMostAParameterTakesIsInvalidAndSaysWhy() {
        assertThat(Quantity.parseBytesAtMost("rate", "8Pi", Long.MAX_VALUE, "why"))
                .isEqualTo(8L << 50);
        assertThatThrownBy(() -> Quantity.parseBytesAtMost("rate", "9999999999999Pi", Long.MAX_VALUE, "the most"))
                .isInstanceOfSatisfying(CsiException.class, e -> {
                    assertThat(e.code()).isEqualTo(Status.Code.INVALID_ARGUMENT);
                    assertThat(e.getMessage())
                            .isEqualTo("rate \"9999999999999Pi\" is more than 9223372036854775807, the most");
                });
        invalid(() -> Quantity.parseBytesAtMost("rate", "1.5Mi", Long.MAX_VALUE, "why"));
    }
}
