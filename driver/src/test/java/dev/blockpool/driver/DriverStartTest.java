package dev.blockpool.driver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.Endpoint;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.pool.AccessType;
import dev.blockpool.pool.Allocation;
import dev.blockpool.pool.Ids;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.ReconcileSteps;
import dev.blockpool.pool.Volume;
import dev.blockpool.pool.VolumeSpecs;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The pool's reconcile runs once the driver serves, beside its calls rather than before them; a
 * pool that cannot be opened yet is tried again, not the end of the start.
 */
class DriverStartTest {

    @TempDir
    Path dir;

    @Test
    void aStartedDriverReconcilesThePoolWhatACrashLeftGoesAndCommittedVolumesStay() throws Exception {
        Path poolDir = dir.resolve("pool");
        Pool pool = Pool.open(poolDir, new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO);
        Volume kept = pool.volumes().create(VolumeSpecs.of("kept", 4096, Allocation.SPARSE, AccessType.BLOCK));
        Path orphan = poolDir.resolve("volumes").resolve(Ids.volumeIdFor("interrupted") + ".img");
        Files.write(orphan, new byte[4096]);
        try (Stream<Path> files = Files.list(poolDir.resolve("volumes"))) {
            for (Path file : files.toList()) {
                // older than the driver's settle time, as a crash before a restart leaves them
                Files.setLastModifiedTime(file, FileTime.from(Instant.now().minus(Duration.ofHours(1))));
            }
        }

        // the reconcile's last step says when it is done: no waiting on its start delay
        CountDownLatch done = new CountDownLatch(1);
        Driver.Running running = controller(dir.resolve("csi.sock"), poolDir, Duration.ZERO, step -> {
            if (step.equals("done")) {
                done.countDown();
            }
        });
        try {
            done.await();
        } finally {
            running.stop(Duration.ofSeconds(5));
        }
        assertThat(orphan).as("an image without a record, after start-up").doesNotExist();
        assertThat(pool.volumes().find(kept.id())).contains(kept);
        assertThat(pool.volumes().imagePath(kept.id())).exists();
    }

    @Test
    void aPoolDirectoryThatCannotBeMadeYetIsTriedAgainUntilItCan() throws Exception {
        // as a pool whose filesystem is not mounted yet fails, at once, within the start's wait
        Path notYet = Files.writeString(dir.resolve("mount"), "");
        Path poolDir = notYet.resolve("pool");
        Driver.Running running = controller(dir.resolve("csi.sock"), poolDir, Duration.ofDays(1), step -> {});
        try {
            while (!running.opening().problems().getFirst().contains("does not open")) {
                Thread.sleep(50); // the first try fails at once; on a slow machine it may outlast the start's wait
            }
            assertThat(running.opening().problems())
                    .singleElement()
                    .asString()
                    .contains("does not open", "cannot create pool directory " + poolDir)
                    .endsWith("the driver tries again until it does");

            Files.delete(notYet);
            Files.createDirectory(notYet);
            while (!running.opening().problems().isEmpty()) {
                Thread.sleep(50); // the next try comes after its pause, however long the machine takes
            }
            assertThat(running.opening().served()).isPresent();
            assertThat(poolDir.resolve("volumes")).isDirectory();
        } finally {
            running.stop(Duration.ofSeconds(5));
        }
    }

    /**
     * A controller of a shared pool on {@code socket}, its reconcile {@code delay} after it serves, telling {@code
     * steps}.
     */
    static Driver.Running controller(Path socket, Path poolDir, Duration delay, ReconcileSteps steps) throws Exception {
        return new Driver(
                        new DriverConfig(
                                Endpoint.parse(socket.toString()),
                                "node-1",
                                "blockpool.csi.dev",
                                poolDir,
                                Mode.CONTROLLER,
                                8),
                        "test",
                        new Driver.Background(delay, steps))
                .start();
    }
}
