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

    @Test
    void sharedHoldsOfDifferentPartsRunTogetherAndExcludeTheExclusiveSide() {
        String answer = locks.withShared(
                () -> {
                    assertThat(locks.withShared(() -> "other target", "vol-1", "/pods/b"))
                            .isEqualTo("other target");
                    assertBusy(() -> locks.withShared(() -> "same target", "vol-1", "/pods/a"));
                    assertBusy(() -> locks.withLock(() -> "stage", "vol-1"));
                    assertThat(locks.withLock(() -> "other volume", "vol-2")).isEqualTo("other volume");
                    return "first";
                },
                "vol-1",
                "/pods/a");
        assertThat(answer).isEqualTo("first");
        assertThat(locks.withLock(() -> "stage", "vol-1")).isEqualTo("stage");
        locks.withLock(
                () -> {
                    assertBusy(() -> locks.withShared(() -> "publish", "vol-1", "/pods/a"));
                    return null;
                },
                "vol-1");
        assertThat(locks.withShared(() -> "publish", "vol-1", "/pods/a")).isEqualTo("publish");
    }

    @Test
    void aSharedHoldThatFailsInsideIsReleased() {
        assertThatThrownBy(() -> locks.withShared(
                        () -> {
                            throw new IllegalStateException("failed");
                        },
                        "vol-1",
                        "/pods/a"))
                .hasMessage("failed");
        assertThat(locks.withLock(() -> "stage", "vol-1")).isEqualTo("stage");
    }

    private static void assertBusy(Runnable call) {
        assertThatThrownBy(call::run)
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.BUSY));
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
