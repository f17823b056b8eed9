package dev.blockpool.driver;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.slf4j.event.Level;

class CallLoggingInterceptorTest {

    private static final String CREATE = "csi.v1.Controller/CreateVolume";
    private static final String PROBE = "csi.v1.Identity/Probe";

    @Test
    void levelFollowsTheStatusCode() {
        Map<Status.Code, Level> expected = Map.ofEntries(
                Map.entry(Status.Code.OK, Level.INFO),
                Map.entry(Status.Code.ABORTED, Level.INFO),
                Map.entry(Status.Code.NOT_FOUND, Level.INFO),
                Map.entry(Status.Code.ALREADY_EXISTS, Level.INFO),
                Map.entry(Status.Code.INVALID_ARGUMENT, Level.WARN),
                Map.entry(Status.Code.FAILED_PRECONDITION, Level.WARN),
                Map.entry(Status.Code.OUT_OF_RANGE, Level.WARN),
                Map.entry(Status.Code.RESOURCE_EXHAUSTED, Level.WARN),
                Map.entry(Status.Code.INTERNAL, Level.ERROR),
                Map.entry(Status.Code.UNKNOWN, Level.ERROR),
                Map.entry(Status.Code.CANCELLED, Level.ERROR),
                Map.entry(Status.Code.DEADLINE_EXCEEDED, Level.ERROR),
                Map.entry(Status.Code.PERMISSION_DENIED, Level.ERROR),
                Map.entry(Status.Code.UNIMPLEMENTED, Level.ERROR),
                Map.entry(Status.Code.UNAVAILABLE, Level.ERROR),
                Map.entry(Status.Code.DATA_LOSS, Level.ERROR),
                Map.entry(Status.Code.UNAUTHENTICATED, Level.ERROR));
        assertThat(expected.keySet()).containsExactlyInAnyOrder(Status.Code.values());
        expected.forEach((code, level) ->
                assertThat(CallLoggingInterceptor.levelOf(CREATE, code)).as(code.name()).isEqualTo(level));
    }

    @Test
    void routineProbesAreDebugOnlyWhileTheySucceed() {
        assertThat(CallLoggingInterceptor.levelOf(PROBE, Status.Code.OK)).isEqualTo(Level.DEBUG);
        assertThat(CallLoggingInterceptor.levelOf(PROBE, Status.Code.INTERNAL)).isEqualTo(Level.ERROR);
    }
}
