package dev.blockpool.csi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;

/** Assertions on the status a call through {@link InProcessCsi} ended with. */
public final class StatusAssertions {

    /** A fully qualified Java exception class, which a user reading a PVC event cannot act on. */
    public static final String JAVA_CLASS_NAME =
            "\\b(java|javax|com|io|org|dev)\\.[a-z0-9_.]+\\.[A-Z]\\w*(Exception|Error)\\b";

    private StatusAssertions() {}

    /** The call's failure, asserted to carry {@code expected}. */
    public static StatusRuntimeException failure(Runnable call, Status.Code expected) {
        StatusRuntimeException e = catchThrowableOfType(StatusRuntimeException.class, call::run);
        assertThat(e).as("the call should have failed with %s", expected).isNotNull();
        assertThat(e.getStatus().getCode()).as(e.getStatus().getDescription()).isEqualTo(expected);
        assertThat(e.getStatus().getDescription())
                .as("a message a person can act on")
                .isNotBlank()
                .doesNotContainPattern(JAVA_CLASS_NAME);
        return e;
    }

    public static void assertCode(Runnable call, Status.Code expected) {
        failure(call, expected);
    }

    /**
     * For a unit called directly, not through gRPC: the status its failure becomes at the edge,
     * asserted to carry {@code expected}; returns the message.
     */
    public static String assertStatusOfThrown(Runnable call, Status.Code expected) {
        RuntimeException thrown = catchThrowableOfType(RuntimeException.class, call::run);
        assertThat(thrown).as("the call should have failed with %s", expected).isNotNull();
        Status status = StatusInterceptor.statusOf("test", thrown);
        assertThat(status.getCode()).as(status.getDescription()).isEqualTo(expected);
        return status.getDescription();
    }

    /** The code the call ended with: OK when it succeeded. */
    public static Status.Code codeOf(Runnable call) {
        try {
            call.run();
            return Status.Code.OK;
        } catch (StatusRuntimeException e) {
            return e.getStatus().getCode();
        }
    }
}
