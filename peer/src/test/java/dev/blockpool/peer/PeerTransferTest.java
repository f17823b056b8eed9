package dev.blockpool.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.StorageException;
import dev.blockpool.pool.ContentSource;
import dev.blockpool.pool.extents.ByteRange;
import dev.blockpool.pool.transfer.Chunk;
import dev.blockpool.pool.transfer.ImageReader;
import dev.blockpool.pool.transfer.RemoteImage;
import java.net.ServerSocket;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Images read from another node's pool over real TLS on loopback sockets. */
class PeerTransferTest {

    private static final ContentSource SNAPSHOT = ContentSource.snapshot("snap-1");

    @RegisterExtension
    final TestPeers peers = new TestPeers();

    @Test
    void aPeerReadsAnImageByteForByte() throws Exception {
        byte[] image = sparseImage(40 * FakeExports.BLOCK + 123);
        FakeExports exports = new FakeExports().holding(SNAPSHOT, image);
        PeerServer server = peers.server("node-b", exports);
        PeerClient client = peers.client(peers.certificates("node-a"), TestPeers.at("node-b", server));

        RemoteImage remote = client.open(SNAPSHOT, "transfer-1").orElseThrow();

        assertThat(remote.node()).isEqualTo("node-b");
        assertThat(remote.sizeBytes()).isEqualTo(image.length);
        byte[] copy = new byte[image.length];
        long from = 0;
        for (List<ByteRange> ranges = remote.ranges(from, 2); !ranges.isEmpty(); ranges = remote.ranges(from, 2)) {
            for (ByteRange range : ranges) {
                for (long offset = range.offset(); offset < range.end(); offset += ImageReader.MAX_CHUNK_BYTES) {
                    int length = (int) Math.min(ImageReader.MAX_CHUNK_BYTES, range.end() - offset);
                    Chunk chunk = remote.read(offset, length);
                    assertThat(chunk.crc32c()).isEqualTo(crc(chunk.data()));
                    System.arraycopy(chunk.data(), 0, copy, (int) chunk.offset(), chunk.data().length);
                }
                from = range.end();
            }
        }
        assertThat(copy).isEqualTo(image);

        ((PeerImage) remote).release();
        client.release("node-b", "transfer-0"); // by the node's name, as after a restart
        assertThat(exports.released).containsExactly("transfer-1", "transfer-0");
    }

    @Test
    void theHolderIsFoundAmongSeveralPeers() throws Exception {
        PeerServer without = peers.server("node-b", new FakeExports());
        PeerServer holder = peers.server("node-c", new FakeExports().holding(SNAPSHOT, new byte[] {1, 2, 3}));
        PeerClient client = peers.client(
                peers.certificates("node-a"), TestPeers.at("node-b", without), TestPeers.at("node-c", holder));

        assertThat(client.open(SNAPSHOT, "transfer-1").map(RemoteImage::node)).contains("node-c");
        assertThat(client.open(ContentSource.snapshot("elsewhere"), "transfer-2"))
                .isEmpty();
    }

    @Test
    void aPeerThatCannotBeAskedMakesTheAnswerRetryLaterNotNowhere() throws Exception {
        PeerServer without = peers.server("node-b", new FakeExports());
        int closedPort;
        try (ServerSocket nobody = new ServerSocket(0)) {
            closedPort = nobody.getLocalPort();
        }
        PeerClient client = peers.client(
                peers.certificates("node-a"),
                TestPeers.at("node-b", without),
                new PeerAddress("node-gone", "127.0.0.1", closedPort));

        assertThatThrownBy(() -> client.open(SNAPSHOT, "transfer-1"))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.UNAVAILABLE))
                .hasMessageContaining("node-gone")
                .hasMessageContaining("snapshot snap-1");
    }

    @Test
    void aSourceGoneSinceItWasLocatedIsNotFound() throws Exception {
        FakeExports exports = new FakeExports().holding(SNAPSHOT, new byte[] {1});
        PeerServer server = peers.server("node-b", exports);
        PeerClient client = peers.client(peers.certificates("node-a"), TestPeers.at("node-b", server));
        PeerImage remote = (PeerImage)
                client.open(SNAPSHOT, "transfer-1", Optional.empty()).orElseThrow();

        exports.holding(SNAPSHOT, new byte[] {2}); // another image under the same name

        assertThatThrownBy(() -> remote.read(0, 1))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.PRECONDITION))
                .hasMessageContaining("start the transfer over")
                .hasMessageNotContaining("Exception");
    }

    private static byte[] sparseImage(int size) {
        byte[] image = new byte[size];
        Random random = new Random(7);
        for (int block = 0; block < size; block += FakeExports.BLOCK) {
            if (block / FakeExports.BLOCK % 3 != 1) { // every third block a hole
                for (int i = block; i < Math.min(size, block + FakeExports.BLOCK); i++) {
                    image[i] = (byte) (random.nextInt(255) + 1);
                }
            }
        }
        return image;
    }

    private static int crc(byte[] data) {
        CRC32C crc = new CRC32C();
        crc.update(data);
        return (int) crc.getValue();
    }
}
