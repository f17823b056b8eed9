package dev.blockpool.pool;

import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;

/**
 * What the pool holds, counted from its directories and the images' sizes, without reading a
 * record: a committed record is a metadata file's name, and what an image promises and holds are
 * its size and its allocated blocks (an image is exactly its volume's or snapshot's size). It
 * looks at the whole pool, so every process sharing a pool counts the same figures, whichever of
 * them made the changes; it costs one directory listing and one statx(2) per image, which is why
 * it is taken now and then in the background rather than at each look (docs/performance.md).
 */
public final class PoolCensus {

    /** The images of one kind: how many committed records, the bytes they promise and those they hold. */
    public record Images(long count, long provisionedBytes, long allocatedBytes) {}

    /**
     * One census: the volumes, the snapshots, the group snapshots, the pool filesystem's size and
     * the bytes free on it, and how long it took.
     */
    public record Figures(
            Images volumes,
            Images snapshots,
            long groupSnapshots,
            long sizeBytes,
            long availableBytes,
            Duration took) {}

    private final Path root;
    private final PoolSpace space;

    PoolCensus(Path root, PoolSpace space) {
        this.root = root;
        this.space = space;
    }

    /** Counts the pool as it is now. */
    public Figures take() {
        long started = System.nanoTime();
        Images volumes = images(root.resolve("volumes"), true);
        Images snapshots = images(root.resolve("snapshots"), true);
        long groups = images(root.resolve("groups"), false).count();
        long size = space.totalBytes();
        long available = space.availableBytes();
        return new Figures(volumes, snapshots, groups, size, available, Duration.ofNanos(System.nanoTime() - started));
    }

    /** The committed records of a directory, each with its image's size and allocation when {@code withImages}. */
    private static Images images(Path directory, boolean withImages) {
        long count = 0;
        long provisioned = 0;
        long allocated = 0;
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(directory, "*" + MetadataStore.SUFFIX)) {
            for (Path record : entries) {
                count++;
                if (!withImages) {
                    continue;
                }
                String name = record.getFileName().toString();
                String image =
                        name.substring(0, name.length() - MetadataStore.SUFFIX.length()) + ImageRecords.IMAGE_SUFFIX;
                try {
                    Libc.FileSpace held = Libc.space(directory.resolve(image).toString());
                    provisioned += held.size();
                    allocated += held.allocated();
                } catch (Libc.ErrnoException e) {
                    // an image missing or deleted since the listing: counted, holding nothing (the health calls report
                    // it)
                    if (e.errno() != Libc.ENOENT) {
                        throw StorageException.io(e, "cannot read the size of %s", directory.resolve(image));
                    }
                }
            }
        } catch (NoSuchFileException e) {
            return new Images(0, 0, 0);
        } catch (IOException e) {
            throw StorageException.io(e, "cannot list %s", directory);
        }
        return new Images(count, provisioned, allocated);
    }
}
