package dev.blockpool.pool;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.pool.extents.ImageExtents;
import dev.blockpool.pool.extents.SnapshotRanges;
import java.io.FileOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The steps of SnapshotMetadata streams run on threads of their own: streams stuck on a pool that
 * does not answer never take the threads of the node's calls (stage, publish, a thaw). The snapshot's
 * image is replaced by a FIFO, whose open waits in the kernel until a writer comes, as an open on a
 * dead NFS server does.
 */
class SnapshotMetadataStepsTest {

    private static final int NODE_THREADS = 2;

    @TempDir
    Path dir;

    @Test
    @Timeout(120)
    void streamsStuckOnThePoolLeaveTheNodesCallsTheirThreads() throws Exception {
        BlockingCalls nodeCalls = new BlockingCalls("node", NODE_THREADS);
        ProcessCommandRunner commands = new ProcessCommandRunner();
        Pool pool = Pool.open(dir.resolve("pool"), commands, Clock.systemUTC(), Duration.ZERO, nodeCalls);
        String volume = pool.volumes()
                .create(VolumeSpecs.of("pvc-stuck", 1 << 20, Allocation.SPARSE, AccessType.BLOCK))
                .id();
        String snapshot =
                pool.snapshots().create("stuck", volume, pool.volumes()).id();
        Path image = pool.snapshots().imagePath(snapshot);
        Files.delete(image);
        commands.runChecked("mkfifo", image.toString());

        List<SnapshotRanges> streams = new ArrayList<>();
        List<Thread> readers = new ArrayList<>();
        try {
            for (int i = 0; i < SnapshotMetadata.STEP_THREADS; i++) {
                SnapshotRanges ranges = pool.snapshotMetadata().allocated(snapshot, 0);
                streams.add(ranges);
                readers.add(Thread.ofVirtual().start(() -> {
                    try {
                        ranges.next(1, () -> false);
                    } catch (RuntimeException e) {
                        // the FIFO is no image: the stream fails once its open returns
                    }
                }));
            }
            awaitOpensInTheKernel(NODE_THREADS);
            assertThat(nodeCalls.call(Duration.ofSeconds(5), "a node's call", () -> "answered"))
                    .isEqualTo("answered");

            awaitOpensInTheKernel(SnapshotMetadata.STEP_THREADS);
            assertThat(opensInTheKernel())
                    .as("every thread for the streams' steps waits on the pool")
                    .isEqualTo(SnapshotMetadata.STEP_THREADS);
            assertThat(nodeCalls.call(Duration.ofSeconds(5), "a node's call", () -> "answered"))
                    .isEqualTo("answered");
        } finally {
            new FileOutputStream(image.toFile()).close(); // a writer lets every waiting open of the FIFO return
            for (Thread reader : readers) {
                reader.join();
            }
            streams.forEach(SnapshotRanges::close);
        }
    }

    /** Waits up to 30 s until {@code count} threads wait in the open of an image. */
    private static void awaitOpensInTheKernel(int count) throws InterruptedException {
        long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (opensInTheKernel() < count && System.nanoTime() < giveUp) {
            Thread.sleep(10);
        }
    }

    private static long opensInTheKernel() {
        return Thread.getAllStackTraces().values().stream()
                .filter(stack -> Arrays.stream(stack)
                        .anyMatch(frame -> frame.getClassName().equals(ImageExtents.class.getName())
                                && frame.getMethodName().equals("open")))
                .count();
    }
}
