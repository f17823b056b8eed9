package dev.blockpool.pool.transfer;

import dev.blockpool.common.StorageException;
import java.util.ArrayDeque;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The chunk reads of one pull, a few in flight at once and handed back in the order they were
 * asked: a lone reader waits a whole round trip (the source's read, checksum and encryption, the
 * network, the check here) for every chunk, and that, not the disks or the link, set a pull's pace
 * (docs/performance-transfer.md). The image is still written in order, so what a pull records as
 * done stays a prefix of the image.
 */
final class ChunkReads {

    /** Reads a pull keeps in flight. */
    static final int IN_FLIGHT = 4;
    /** Threads for the reads of all pulls at once; a read that finds them busy runs on its pull's own thread. */
    static final int THREADS = 8;

    /** The reads' threads: platform threads, ended after a while without a read. */
    static Executor threads() {
        return new ThreadPoolExecutor(
                0,
                THREADS,
                30,
                TimeUnit.SECONDS,
                new SynchronousQueue<>(),
                Thread.ofPlatform().name("pull-read-", 0).daemon().factory(),
                new ThreadPoolExecutor.CallerRunsPolicy());
    }

    /** One chunk asked for: where it goes in the image, and its bytes once they are here. */
    private record Asked(long offset, int length, CompletableFuture<byte[]> data) {}

    private final Executor executor;
    private final ArrayDeque<Asked> asked = new ArrayDeque<>();

    ChunkReads(Executor executor) {
        this.executor = executor;
    }

    /** Asks for the chunk {@code read} returns; once {@link #IN_FLIGHT} are on their way, writes the first of them. */
    void ask(long offset, int length, Supplier<byte[]> read, ChunkWriter writer) {
        asked.add(new Asked(offset, length, CompletableFuture.supplyAsync(read, executor)));
        if (asked.size() >= IN_FLIGHT) {
            writeFirst(writer);
        }
    }

    /** Writes every chunk asked for, in order. */
    void drain(ChunkWriter writer) {
        while (!asked.isEmpty()) {
            writeFirst(writer);
        }
    }

    /** Lets go of the chunks still on their way: their bytes are not written. */
    void abandon() {
        asked.forEach(chunk -> chunk.data().cancel(false));
        asked.clear();
    }

    private void writeFirst(ChunkWriter writer) {
        Asked first = asked.removeFirst();
        writer.write(first.offset(), first.length(), arrived(first.data()));
    }

    private static byte[] arrived(CompletableFuture<byte[]> data) {
        try {
            return data.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException failure) {
                throw failure; // the read's own StorageException, with its words
            }
            throw StorageException.internal(
                    e.getCause(), "a chunk read failed: %s", e.getCause().getMessage());
        } catch (CancellationException e) {
            throw StorageException.unavailable("a chunk read was abandoned");
        }
    }

    /** Where the chunks go, in the order they were asked for. */
    @FunctionalInterface
    interface ChunkWriter {
        void write(long offset, int length, byte[] data);
    }
}
