package dev.blockpool.csi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Status;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** One rule per kind of request field, the same in every service. */
class RequestFieldsTest {

    private static void assertInvalid(Runnable call, String messagePart) {
        assertThatThrownBy(call::run).isInstanceOfSatisfying(CsiException.class, e -> {
            assertThat(e.code()).isEqualTo(Status.Code.INVALID_ARGUMENT);
            assertThat(e.getMessage()).contains(messagePart);
        });
    }

    @Test
    void idsAreRequiredAtMost128BytesCountingBytesNotCharactersAndFreeOfNul() {
        assertThat(RequestFields.id("volume_id", "x".repeat(128))).hasSize(128);
        assertInvalid(() -> RequestFields.id("volume_id", ""), "volume_id is required");
        for (String tooLong : List.of("x".repeat(129), "é".repeat(65))) {
            assertInvalid(() -> RequestFields.id("volume_id", tooLong), "longer than 128 bytes");
        }
        assertInvalid(() -> RequestFields.id("name", "a\0b"), "NUL");
    }

    @Test
    void pathsAreAbsoluteBelowRoot() {
        assertThat(RequestFields.absolutePath("target_path", "/var/lib/kubelet/pods/x"))
                .isEqualTo(Path.of("/var/lib/kubelet/pods/x"));
        assertInvalid(() -> RequestFields.absolutePath("target_path", "relative/dir"), "absolute");
        assertInvalid(() -> RequestFields.absolutePath("target_path", "/"), "absolute");
        assertInvalid(() -> RequestFields.absolutePath("target_path", "/a\0b"), "NUL");
        assertInvalid(() -> RequestFields.absolutePath("target_path", "/" + "d".repeat(4096)), "4096");
    }

    @Test
    void pathsAreNormalizedFreeOfControlCharactersAndOfOverlongNames() {
        for (String walking :
                new String[] {"/var/lib/kubelet/pods/../../../etc", "/var/lib/kubelet/pods/x/.", "/var/lib/./kubelet"
                }) {
            assertInvalid(() -> RequestFields.absolutePath("target_path", walking), "\"..\"");
        }
        assertInvalid(() -> RequestFields.absolutePath("target_path", "/pods/a\nb"), "control characters");
        assertInvalid(() -> RequestFields.absolutePath("target_path", "/pods/" + "n".repeat(256)), "255 bytes");
        assertThat(RequestFields.absolutePath("target_path", "/pods/" + "n".repeat(255))
                        .getNameCount())
                .isEqualTo(2);
    }
}
