package dev.blockpool.host;

import static org.assertj.core.api.Assertions.assertThatCode;

import dev.blockpool.host.loops.HostLoopDevices;
import dev.blockpool.host.mounts.HostMounter;
import org.junit.jupiter.api.Test;

/**
 * The system calls the host's rooms bind beside their callers: each binds and links, and its
 * warm-up call (on an empty path or no descriptor) fails with an errno alone, which the warm-up
 * ignores; a wrong binding would fail here as the call could not be made at all.
 */
class HostSystemCallsTest {

    @Test
    void theMountAndLoopCallsBindAndTheirWarmUpFailsOnlyWithErrno() {
        assertThatCode(() -> {
                    HostMounter.prepareCalls();
                    HostLoopDevices.prepareCalls();
                })
                .doesNotThrowAnyException();
    }
}
