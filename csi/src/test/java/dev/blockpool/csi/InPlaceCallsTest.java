package dev.blockpool.csi;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.BlockingCalls;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class InPlaceCallsTest {

    @Test
    void whatWaitsIsRefusedInPlaceAndTheRestOfACallGoesElsewhere() throws Exception {
        BlockingCalls calls = new BlockingCalls("test", 1);
        AtomicReference<Throwable> refused = new AtomicReference<>();
        CompletableFuture<Thread> rest = new CompletableFuture<>();
        InPlaceCalls.EXECUTOR.execute(() -> {
            try {
                calls.call(Duration.ofSeconds(5), "statfs(2) of /pool", () -> "done");
            } catch (IllegalStateException e) {
                refused.set(e);
            }
            InPlaceCalls.elsewhere(() -> rest.complete(Thread.currentThread()));
        });
        assertThat(refused.get())
                .hasMessage("statfs(2) of /pool would wait on the gRPC transport thread, which serves other calls;"
                        + " the call must run on a thread of its own");
        assertThat(rest.get(5, TimeUnit.SECONDS).isVirtual()).isTrue();

        // Not in place: the rest runs right here.
        InPlaceCalls.elsewhere(
                () -> assertThat(Thread.currentThread().isVirtual()).isFalse());
        assertThat(calls.call(Duration.ofSeconds(5), "statfs(2) of /pool", () -> "done"))
                .isEqualTo("done");
    }
}
