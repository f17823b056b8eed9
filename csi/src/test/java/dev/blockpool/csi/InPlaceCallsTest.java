package dev.blockpool.csi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.blockpool.common.BlockingCalls;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class InPlaceCallsTest {

    @Test
    void whatWaitsIsRefusedInPlaceAndTheRestOfACallGoesElsewhere() throws Exception {
        BlockingCalls calls = new BlockingCalls("test", 1);
        AtomicReference<Throwable> refused = new AtomicReference<>();
        Replies<String> reply = new Replies<>();
        AtomicReference<Runnable> handedOver = new AtomicReference<>();
        InPlaceCalls.EXECUTOR.execute(() -> {
            try {
                calls.call(Duration.ofSeconds(5), "statfs(2) of /pool", () -> "done");
            } catch (IllegalStateException e) {
                refused.set(e);
            }
            InPlaceCalls.elsewhere(handedOver::set, reply, "Stats", () -> "answer");
        });
        assertThat(refused.get())
                .hasMessage("statfs(2) of /pool would wait on the gRPC transport thread, which serves other calls;"
                        + " the call must run on a thread of its own");
        assertThat(reply.values).isEmpty();
        handedOver.get().run();
        assertThat(reply.values).containsExactly("answer");
        assertThat(reply.completed).isTrue();

        // Not in place: the rest runs right here.
        Replies<String> here = new Replies<>();
        InPlaceCalls.elsewhere(work -> fail("handed over"), here, "Stats", () -> "answer");
        assertThat(here.values).containsExactly("answer");
    }

    @Test
    void aCallWhoseRestFindsNoThreadIsAnsweredAtOnceToRetry() {
        Replies<String> reply = new Replies<>();
        InPlaceCalls.EXECUTOR.execute(() -> InPlaceCalls.elsewhere(
                work -> {
                    throw new RejectedExecutionException("all 2 threads for calls are busy");
                },
                reply,
                "Stats",
                () -> "answer"));
        assertThat(Status.fromThrowable(reply.error).getCode()).isEqualTo(StatusInterceptor.RETRY_LATER);
        assertThat(reply.error).hasMessageContaining("all 2 threads for calls are busy; retry later");
    }

    private static final class Replies<T> implements StreamObserver<T> {
        final List<T> values = new ArrayList<>();
        boolean completed;
        Throwable error;

        @Override
        public void onNext(T value) {
            values.add(value);
        }

        @Override
        public void onError(Throwable t) {
            error = t;
        }

        @Override
        public void onCompleted() {
            completed = true;
        }
    }
}
