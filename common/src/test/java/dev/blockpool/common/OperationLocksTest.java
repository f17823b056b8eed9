package dev.blockpool.common;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

class OperationLocksTest {

    private final OperationLocks locks = new OperationLocks();

    @Test
    void secondOperationOnBusyIdIsAborted() throws Exception {
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        try (var pool = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<String> first = pool.submit(() -> locks.withLock(
                    () -> {
                        inside.countDown();
                        await(release);
                        return "first";
                    },
                    "vol-1"));
            inside.await();
            assertThatThrownBy(() -> locks.withLock(() -> "second", "vol-1"))
                    .isInstanceOfSatisfying(
                            StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.BUSY));
            assertThat(locks.withLock(() -> "other", "vol-2")).isEqualTo("other");
            release.countDown();
            assertThat(first.get()).isEqualTo("first");
        }
        assertThat(locks.withLock(() -> "again", "vol-1")).isEqualTo("again");
    }

    @Test
    void failedAcquisitionReleasesWhatWasTaken() {
        locks.withLock(
                () -> {
                    assertThatThrownBy(() -> locks.withLock(() -> "x", "vol-2", "vol-1"))
                            .isInstanceOf(StorageException.class);
                    return null;
                },
                "vol-1");
        assertThat(locks.withLock(() -> "free", "vol-2")).isEqualTo("free");
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
