package dev.blockpool.pool;

import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import dev.blockpool.pool.extents.ImageExtents;
import dev.blockpool.pool.records.RecordStore;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * What the pool holds, counted from its directories and the images' sizes, without reading a
 * record: a committed record is a record file's name, and what an image promises and holds are
 * its size and its allocated blocks (an image is exactly its volume's or snapshot's size), of
 * which the filesystem flags some shared with other images by reflinks (FIEMAP). It looks at the
 * whole pool, so every process sharing a pool counts the same figures, whichever of them made the
 * changes; it costs one directory listing and one statx(2) per image, and a FIEMAP per image
 * that holds data, which is why it is taken now and then in the background rather than at each
 * look (docs/performance-pool.md).
 */
public final class PoolCensus {

    /** Extents asked of the filesystem per FIEMAP call: a few tens of KiB of answer. */
    static final int EXTENTS_PER_CALL = 1024;

    /**
     * The images of one kind: how many committed records, the bytes they promise, those they hold,
     * and of those the bytes in extents the filesystem flags shared (each image that shares an
     * extent counts it; 0 where the filesystem does not tell, see {@link Figures#sharingTold}).
     */
    public record Images(long count, long provisionedBytes, long allocatedBytes, long sharedBytes) {}

    /**
     * One census: the volumes, the snapshots, the group snapshots, the pool filesystem's size and
     * the bytes free on it, whether the filesystem told which extents are shared (false where it
     * maps no extents: NFS, tmpfs, FUSE; or when no image was there to ask), how long it took, and
     * what the pool has promised and may promise, as {@link PoolCapacity} counts them (the images
     * of transfers between nodes too, which no record names).
     */
    public record Figures(
            Images volumes,
            Images snapshots,
            long groupSnapshots,
            long sizeBytes,
            long availableBytes,
            boolean sharingTold,
            Duration took,
            long promisedBytes,
            long promiseLimitBytes) {}

    private final Path root;
    private final PoolSpace space;
    private final PoolCapacity capacity;

    PoolCensus(Path root, PoolSpace space, PoolCapacity capacity) {
        this.root = root;
        this.space = space;
        this.capacity = capacity;
    }

    /** Counts the pool as it is now. */
    public Figures take() {
        long started = System.nanoTime();
        Sharing sharing = new Sharing();
        Images volumes = images(root.resolve("volumes"), sharing);
        Images snapshots = images(root.resolve("snapshots"), sharing);
        long groups = images(root.resolve("groups"), null).count();
        long size = space.totalBytes();
        long available = space.availableBytes();
        long promised = capacity.read().promisedBytes();
        return new Figures(
                volumes,
                snapshots,
                groups,
                size,
                available,
                sharing.answer == Sharing.Answer.TOLD,
                Duration.ofNanos(System.nanoTime() - started),
                promised,
                capacity.policy().limitBytes(size));
    }

    /**
     * The committed records of a directory, each with its image's size, allocation and shared
     * bytes when {@code sharing} is given (records without images when null).
     */
    private static Images images(Path directory, Sharing sharing) {
        long[] figures = new long[4];
        if (sharing == null) {
            forEachRecord(directory, record -> figures[0]++);
            return new Images(figures[0], 0, 0, 0);
        }
        forEachImage(directory, (image, held) -> {
            figures[0]++;
            figures[1] += held.size();
            figures[2] += held.allocated();
            figures[3] += sharing.sharedBytes(image, held);
        });
        return new Images(figures[0], figures[1], figures[2], figures[3]);
    }

    /**
     * Each committed record's image in {@code directory} with its size and allocated bytes, one
     * statx(2) each; an image missing or deleted since the listing holds nothing (the health calls
     * report it).
     */
    static void forEachImage(Path directory, BiConsumer<Path, Libc.FileSpace> visit) {
        forEachRecord(directory, record -> {
            String name = record.getFileName().toString();
            Path image = directory.resolve(
                    name.substring(0, name.length() - RecordStore.SUFFIX.length()) + ImageRecords.IMAGE_SUFFIX);
            Libc.FileSpace held;
            try {
                held = Libc.space(image.toString());
            } catch (Libc.ErrnoException e) {
                if (e.errno() != Libc.ENOENT) {
                    throw StorageException.io(e, "cannot read the size of %s", image);
                }
                held = new Libc.FileSpace(0, 0);
            }
            visit.accept(image, held);
        });
    }

    private static void forEachRecord(Path directory, Consumer<Path> visit) {
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(directory, "*" + RecordStore.SUFFIX)) {
            entries.forEach(visit);
        } catch (NoSuchFileException e) {
            // a pool not yet made holds nothing
        } catch (IOException e) {
            throw StorageException.io(e, "cannot list %s", directory);
        }
    }

    /**
     * Whether the pool's filesystem tells which extents are shared, learnt from the first image
     * asked, and the shared bytes of each image. An image that holds no blocks shares none, so
     * once the filesystem has answered only images that hold data are asked; once it has refused,
     * none is.
     */
    private static final class Sharing {

        enum Answer {
            NOT_ASKED,
            TOLD,
            REFUSED
        }

        private Answer answer = Answer.NOT_ASKED;

        long sharedBytes(Path image, Libc.FileSpace held) {
            if (answer == Answer.REFUSED || (answer == Answer.TOLD && held.allocated() == 0)) {
                return 0;
            }
            try (ImageExtents extents = ImageExtents.open(image, image.toString())) {
                long shared = extents.sharedBytes(held.size(), EXTENTS_PER_CALL);
                answer = Answer.TOLD;
                return shared;
            } catch (StorageException e) {
                if (e.kind() == StorageException.Kind.NOT_FOUND) {
                    return 0; // deleted since the listing, as the statx above allows
                }
                throw e;
            } catch (Libc.ErrnoException e) {
                if (!ImageExtents.cannotMap(e)) {
                    throw StorageException.io(e, "cannot map the extents of %s", image);
                }
                answer = Answer.REFUSED;
                return 0;
            }
        }
    }
}
