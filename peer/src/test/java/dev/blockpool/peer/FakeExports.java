package dev.blockpool.peer;

import dev.blockpool.common.StorageException;
import dev.blockpool.pool.ContentSource;
import dev.blockpool.pool.Volume;
import dev.blockpool.pool.extents.ByteRange;
import dev.blockpool.pool.transfer.Chunk;
import dev.blockpool.pool.transfer.ImageExports;
import dev.blockpool.pool.transfer.ImageReader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.CRC32C;

/**
 * A pool's exports held in memory: each image's ranges are its runs of non-zero 64 KiB blocks.
 * Counts every call, so a test can tell that a refused client reached none.
 */
final class FakeExports implements ImageExports {

    static final int BLOCK = 64 << 10;

    private final Map<ContentSource, byte[]> images = new ConcurrentHashMap<>();
    private final Map<String, Volume> volumes = new ConcurrentHashMap<>();
    final AtomicInteger calls = new AtomicInteger();
    final List<String> released = Collections.synchronizedList(new ArrayList<>());

    FakeExports holding(ContentSource source, byte[] image) {
        images.put(source, image);
        return this;
    }

    FakeExports holding(Volume volume) {
        volumes.put(volume.id(), volume);
        return this;
    }

    @Override
    public Optional<Volume> volume(String volumeId) {
        calls.incrementAndGet();
        return Optional.ofNullable(volumes.get(volumeId));
    }

    @Override
    public Optional<Long> find(ContentSource source) {
        calls.incrementAndGet();
        return Optional.ofNullable(images.get(source)).map(image -> (long) image.length);
    }

    @Override
    public ImageReader open(ContentSource source, String transferId, Optional<String> basis) {
        calls.incrementAndGet();
        byte[] image = images.get(source);
        if (image == null) {
            throw StorageException.notFound("%s %s is not in this pool", source.kind(), source.id());
        }
        return new ImageReader() {
            @Override
            public long sizeBytes() {
                return image.length;
            }

            @Override
            public String identity() {
                return "image-" + Arrays.hashCode(image);
            }

            @Override
            public Optional<String> basis() {
                return Optional.empty();
            }

            @Override
            public List<ByteRange> ranges(long from, int max) {
                List<ByteRange> ranges = new ArrayList<>();
                long start = -1;
                for (long block = from / BLOCK * BLOCK; block < image.length && ranges.size() < max; block += BLOCK) {
                    boolean data = holdsData(image, (int) block);
                    if (data && start < 0) {
                        start = block;
                    } else if (!data && start >= 0) {
                        ranges.add(ByteRange.between(start, block));
                        start = -1;
                    }
                }
                if (start >= 0 && ranges.size() < max) {
                    ranges.add(ByteRange.between(start, image.length));
                }
                return ranges;
            }

            @Override
            public Chunk read(long offset, int length) {
                int end = (int) Math.min(image.length, offset + length);
                byte[] data = Arrays.copyOfRange(image, (int) offset, end);
                CRC32C crc = new CRC32C();
                crc.update(data);
                return new Chunk(offset, data, (int) crc.getValue());
            }

            @Override
            public void close() {}
        };
    }

    @Override
    public void release(String transferId) {
        calls.incrementAndGet();
        released.add(transferId);
    }

    private static boolean holdsData(byte[] image, int block) {
        for (int i = block; i < Math.min(image.length, block + BLOCK); i++) {
            if (image[i] != 0) {
                return true;
            }
        }
        return false;
    }
}
