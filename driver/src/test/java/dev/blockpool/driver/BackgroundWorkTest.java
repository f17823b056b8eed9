package dev.blockpool.driver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.OperationLocks;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.pool.Pool;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The driver's periodic looks: one called for sooner than its period, and their end at the stop. */
class BackgroundWorkTest {

    @TempDir
    Path dir;

    @Test
    void aLookCalledForRunsBeforeItsPeriodAndEndsAtTheStop() throws Exception {
        Pool pool = Pool.open(dir, new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO);
        BackgroundWork work = BackgroundWork.start(
                pool, new OperationLocks(), false, Duration.ofHours(1), Duration.ofHours(1), step -> {});
        CountDownLatch looked = new CountDownLatch(1);
        AtomicBoolean called = new AtomicBoolean();
        // as a container's new cgroup calls for the I/O limits' look: once, at once
        work.every(Duration.ofHours(1), "test-look", looked::countDown, limit -> {
            if (!called.getAndSet(true)) {
                return true;
            }
            Thread.sleep(limit);
            return false;
        });

        assertThat(looked.await(30, TimeUnit.SECONDS))
                .as("the look ran, an hour before its period")
                .isTrue();
        assertThat(work.stop(System.nanoTime() + TimeUnit.SECONDS.toNanos(30)))
                .as("the look's thread saw the stop")
                .isTrue();
    }
}
