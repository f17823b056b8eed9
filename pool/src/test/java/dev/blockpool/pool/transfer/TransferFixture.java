package dev.blockpool.pool.transfer;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.common.StorageException;
import dev.blockpool.pool.AccessType;
import dev.blockpool.pool.Allocation;
import dev.blockpool.pool.CapacityPolicy;
import dev.blockpool.pool.ContentSource;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.VolumeSpec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Clock;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/** Two pools of two nodes in temporary directories, the source's exports and the destination's imports. */
final class TransferFixture {

    static final long MIB = 1 << 20;
    static final String SOURCE_NODE = "node-a";

    final Pool source;
    final Pool destination;
    final PoolImageExports exports;

    TransferFixture(Path dir) {
        this(dir, CapacityPolicy.DEFAULT);
    }

    TransferFixture(Path dir, CapacityPolicy policy) {
        source = open(dir.resolve("a"), policy);
        destination = open(dir.resolve("b"), policy);
        exports = new PoolImageExports(source, Clock.systemUTC());
    }

    /** The destination's imports as a new process would have them. */
    ImageImports imports() {
        return new ImageImports(destination, new BlockingCalls("test-import", 2));
    }

    static Pool open(Path root, CapacityPolicy policy) {
        return Pool.open(
                root, new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO, new BlockingCalls(), policy);
    }

    static VolumeSpec spec(String name, long bytes, Optional<ContentSource> from) {
        return new VolumeSpec(name, bytes, "ext4", Allocation.SPARSE, Set.of(AccessType.MOUNT), Map.of(), from);
    }

    /** Writes {@code length} bytes of {@code value} at {@code offset} into the image. */
    static void write(Path image, long offset, int length, int value) {
        byte[] data = new byte[length];
        Arrays.fill(data, (byte) value);
        try (FileChannel channel = FileChannel.open(image, StandardOpenOption.WRITE)) {
            ByteBuffer buffer = ByteBuffer.wrap(data);
            while (buffer.hasRemaining()) {
                channel.write(buffer, offset + buffer.position());
            }
            channel.force(true);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The source's image opened for {@code transferId}, as the destination's pull reads it. */
    LoopbackImage remote(ContentSource what, String transferId) {
        return new LoopbackImage(SOURCE_NODE, exports.open(what, transferId, Optional.empty()));
    }

    /** What a pull that fails says: its message, which must name no Java class. */
    static String message(StorageException e) {
        return e.getMessage();
    }
}
