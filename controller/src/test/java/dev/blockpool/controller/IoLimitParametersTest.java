package dev.blockpool.controller;

import static dev.blockpool.csi.StatusAssertions.assertStatusOfThrown;
import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.IoLimits;
import io.grpc.Status;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class IoLimitParametersTest {

    @Test
    void noKeyIsNoLimit() {
        assertThat(IoLimitParameters.of(Map.of(), Map.of())).isEqualTo(IoLimits.NONE);
    }

    @Test
    void iopsAreWholeNumbersAndBytesAreQuantities() {
        assertThat(IoLimitParameters.of(
                        Map.of(),
                        Map.of(
                                "readIOPS", "500",
                                "writeIOPS", " 10 ",
                                "readBytesPerSecond", "50Mi",
                                "writeBytesPerSecond", "100M")))
                .isEqualTo(new IoLimits(500, 10, 50L << 20, 100_000_000L));
        assertThat(IoLimitParameters.of(Map.of(), Map.of("readIOPS", "4294967294", "writeBytesPerSecond", "8Pi")))
                .isEqualTo(new IoLimits(4294967294L, 0, 0, 8L << 50));
    }

    @Test
    void zeroAndUnlimitedAreNoLimit() {
        assertThat(IoLimitParameters.of(
                        Map.of(),
                        Map.of(
                                "readIOPS", "0",
                                "writeIOPS", "unlimited",
                                "readBytesPerSecond", "Unlimited",
                                "writeBytesPerSecond", "0")))
                .isEqualTo(IoLimits.NONE);
    }

    @Test
    void theAttributesClassWinsKeyByKeyOverTheStorageClass() {
        Map<String, String> storageClass = Map.of("readIOPS", "100", "writeIOPS", "200");

        assertThat(IoLimitParameters.of(storageClass, Map.of("writeIOPS", "unlimited", "readBytesPerSecond", "1Mi")))
                .isEqualTo(new IoLimits(100, 0, 1L << 20, 0));
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "readIOPS|-5|readIOPS \"-5\" is negative: give a limit above 0, or \"unlimited\"",
                "writeBytesPerSecond|-1Mi|writeBytesPerSecond \"-1Mi\" is negative",
                "readIOPS|fast|readIOPS \"fast\" is not a number: give a whole number of I/O operations per second"
                        + " such as 500, or \"unlimited\"",
                "writeIOPS|100.5|writeIOPS \"100.5\" is not a whole number",
                "writeIOPS|1e3|writeIOPS \"1e3\" is not a whole number",
                "readIOPS|1k|readIOPS \"1k\" is not a number",
                "readIOPS|4294967295|readIOPS \"4294967295\" is more than 4294967294, the most the kernel's I/O"
                        + " throttle takes; for no limit give \"unlimited\"",
                "readIOPS|99999999999999999999|is more than 4294967294",
                "writeIOPS|9|writeIOPS \"9\" is below 10: with fewer I/O operations per second every synchronous"
                        + " write of the volume's pods stalls; give at least 10, or \"unlimited\"",
                "readBytesPerSecond|fast|readBytesPerSecond \"fast\" is not a size such as 1Gi",
                "readBytesPerSecond|1.5Mi|is not a size",
                "writeBytesPerSecond|1023Ki|writeBytesPerSecond \"1023Ki\" is below 1Mi (1048576 bytes per second)",
                "writeBytesPerSecond|9999999999999Pi|is more than 9223372036854775807, the most bytes per second a"
                        + " limit can say",
            })
    void anInfeasibleLimitIsInvalidAndSaysWhatWould(String key, String value, String message) {
        assertThat(assertStatusOfThrown(
                        () -> IoLimitParameters.check(Map.of(key, value)), Status.Code.INVALID_ARGUMENT))
                .contains(message);
    }
}
