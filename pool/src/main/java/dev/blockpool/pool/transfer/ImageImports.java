package dev.blockpool.pool.transfer;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.StorageException;
import dev.blockpool.common.TestKillPoint;
import dev.blockpool.pool.Allocation;
import dev.blockpool.pool.ContentSource;
import dev.blockpool.pool.Ids;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.Volume;
import dev.blockpool.pool.VolumeSpec;
import dev.blockpool.pool.extents.ByteRange;
import dev.blockpool.pool.records.DurableFiles;
import dev.blockpool.pool.records.RecordStore;
import dev.blockpool.pool.transfer.TransferRecords.Pull;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The destination's side of transfers: pulls an image from another node's pool
 * ({@link RemoteImage}) into {@code incoming/<volume-id>.img}, then hands it to the pool's domain
 * as the volume's image ({@link #createVolume}).
 *
 * <p>A pull writes only the ranges the source says hold data (the rest of the sparse image stays
 * a hole), a chunk at a time, each checked against what was asked and its CRC-32C before it is
 * written. How far it has come is recorded in {@code incoming/<volume-id>.json}, the image flushed
 * before the record says so: a pull of the same source image (its identity) continues from there,
 * after a dropped connection or in a new process; a pull of a source that changed starts over.
 * While it exists, the incoming image holds its full size among the pool's promises.
 *
 * <p>A pull that holds a finished image may take the source's next round (a volume's copy frozen
 * again, opened on the identity it holds: {@link #basisFor}) as a delta: only the ranges changed
 * since are written over it, those that became holes punched as holes (written as zeros where the
 * filesystem cannot punch them). Its record says which round it
 * applies from which, so that a delta cut short, which leaves the image a mix of the two, is
 * applied again from where it stood (the source keeps the basis until its next round); a source
 * that no longer offers that delta has the pull start over with the whole image. A mix is never
 * finished, so never made a volume.
 */
public final class ImageImports {

    private static final Logger log = LoggerFactory.getLogger(ImageImports.class);

    /** Ranges asked of the source at once. */
    static final int RANGES_PER_ASK = 1024;
    /** Reads of one chunk before a pull gives up on a source whose chunks arrive damaged. */
    static final int READ_ATTEMPTS = 3;
    /** Bytes written between two records of the progress: what a crash may make a pull copy again. */
    static final long RECORD_EVERY_BYTES = 64L << 20;
    /** A write or flush that takes longer is taken for a pool that does not answer. */
    static final Duration CALL_DEADLINE = Duration.ofMinutes(1);
    /** Threads for the pulls' calls on the pool, apart from those of the node's own calls. */
    static final int THREADS = 4;
    /** The longest identity a source may send: it is kept in the progress record. */
    private static final int MAX_IDENTITY_CHARS = 256;

    /** Told how far a pull has come: every byte below {@code doneBytes} of {@code sizeBytes} is here. */
    @FunctionalInterface
    public interface Progress {
        void reached(long doneBytes, long sizeBytes);
    }

    private final Pool pool;
    private final Path directory;
    private final RecordStore<Pull> records;
    private final BlockingCalls blocking;
    private final Executor readThreads = ChunkReads.threads();
    private final PullLocks locks;

    public ImageImports(Pool pool) {
        this(pool, new BlockingCalls("transfer-import", THREADS));
    }

    ImageImports(Pool pool, BlockingCalls blocking) {
        this.pool = pool;
        this.directory = pool.root().resolve("incoming");
        this.records = new RecordStore<>(directory, TransferRecords.PULL);
        this.blocking = blocking;
        this.locks = new PullLocks(directory);
    }

    /**
     * Pulls {@code image}, the snapshot or volume {@code source} of another node, for the volume
     * {@code targetId}, continuing what an earlier pull of the same image left; returns, once the
     * whole image is here, the bytes it wrote. A source that cannot be reached fails with its error
     * (UNAVAILABLE), and what arrived before stays for the next pull. {@code image} is opened on
     * the basis {@link #basisFor} names (none for a restore or clone, which holds nothing yet): on a
     * basis, it is a delta round. PRECONDITION, the pull discarded so that the next starts over,
     * when it is a delta from an image this pull does not hold whole.
     */
    public long pull(String targetId, ContentSource source, RemoteImage image, Progress progress) {
        TransferIds.requireVolumeId(targetId);
        TransferIds.requireSource(source);
        FileLock held = lockPull(targetId);
        try {
            return pullLocked(targetId, source, image, progress);
        } finally {
            try {
                held.release();
            } catch (IOException e) {
                log.warn("cannot unlock the pull of volume {}: {}", targetId, e.getMessage());
            }
        }
    }

    private FileLock lockPull(String targetId) {
        return blocking.call(CALL_DEADLINE, "locking the pull of " + targetId, () -> locks.lock(targetId));
    }

    private long pullLocked(String targetId, ContentSource source, RemoteImage image, Progress progress) {
        Pull pull = startingPoint(targetId, source, image);
        Path file = imagePath(targetId);
        String what = TransferIds.describe(source) + " from node " + pull.node();
        progress.reached(pull.doneBytes(), pull.sizeBytes());
        try (FileChannel channel = open(file);
                Writer writer = new Writer(targetId, pull, file, channel, what, progress)) {
            try {
                copy(image, writer);
            } catch (StorageException failure) {
                writer.recordQuietly(failure);
                throw failure;
            }
            writer.record(pull.sizeBytes());
            log.info(
                    "pulled {} ({} bytes, {} written{}) for volume {}",
                    what,
                    pull.sizeBytes(),
                    writer.writtenBytes,
                    pull.basis()
                            .map(basis -> " as changed since image " + basis)
                            .orElse(""),
                    targetId);
            return writer.writtenBytes;
        } catch (IOException e) {
            throw StorageException.io(e, "cannot write %s", file);
        }
    }

    /** Asks the source for its ranges from where the pull stands, and copies them until there are none. */
    private void copy(RemoteImage image, Writer writer) {
        ChunkReads reads = new ChunkReads(readThreads);
        try {
            copy(image, writer, reads);
        } finally {
            reads.abandon(); // after a failure: what is still on its way is not written
        }
    }

    private static void copy(RemoteImage image, Writer writer, ChunkReads reads) {
        ChunkReads.ChunkWriter written = (offset, length, data) -> {
            writer.write(offset, data);
            writer.completed(offset + length);
        };
        long size = writer.pull.sizeBytes();
        while (writer.done < size) {
            long told = image.sizeBytes();
            if (told != size) {
                throw writer.refused("its size changed from %d to %d bytes during the pull", size, told);
            }
            List<ByteRange> ranges = image.ranges(writer.done, RANGES_PER_ASK);
            if (ranges.isEmpty()) {
                return;
            }
            long asked = writer.done; // where the chunks asked so far end: the written may lag behind
            for (ByteRange range : ranges) {
                if (range.offset() < asked) {
                    throw writer.refused(
                            "it sent the range at %d after offset %d: its ranges must increase", range.offset(), asked);
                }
                if (range.end() > size) {
                    throw writer.refused(
                            "it sent a range from %d to %d, past its size of %d bytes",
                            range.offset(), range.end(), size);
                }
                for (long at = range.offset(); at < range.end(); ) {
                    long offset = at;
                    int length = (int) Math.min(ImageReader.MAX_CHUNK_BYTES, range.end() - at);
                    reads.ask(offset, length, () -> fetch(image, offset, length, writer), written);
                    at += length;
                }
                asked = range.end();
            }
            reads.drain(written); // the next ranges are asked from what is written
        }
    }

    /** The chunk at {@code offset}, read again while it arrives damaged, at most {@link #READ_ATTEMPTS} times. */
    private static byte[] fetch(RemoteImage image, long offset, int length, Writer writer) {
        String problem = "";
        for (int attempt = 1; attempt <= READ_ATTEMPTS; attempt++) {
            Chunk chunk = image.read(offset, length);
            if (chunk.offset() != offset) {
                problem = "it was of offset " + chunk.offset();
            } else if (chunk.data().length != length) {
                problem = "it held " + chunk.data().length + " bytes";
            } else if (crc32c(chunk.data()) != chunk.crc32c()) {
                problem = "its CRC-32C did not match its bytes";
            } else {
                return chunk.data();
            }
            log.warn(
                    "the chunk of {} bytes at offset {} of {} arrived damaged ({}), attempt {} of {}",
                    length,
                    offset,
                    writer.what,
                    problem,
                    attempt,
                    READ_ATTEMPTS);
        }
        throw StorageException.unavailable(
                "the pull of %s for volume %s failed: the chunk of %d bytes at offset %d arrived damaged %d times "
                        + "(the last time %s); the next try continues from offset %d, and if it fails again, look at "
                        + "the network between the nodes and at the source node's pool",
                writer.what, writer.targetId, length, offset, READ_ATTEMPTS, problem, writer.recordedBytes);
    }

    private static boolean allZeros(byte[] data) {
        for (byte b : data) {
            if (b != 0) {
                return false;
            }
        }
        return true;
    }

    private static int crc32c(byte[] data) {
        CRC32C crc = new CRC32C();
        crc.update(data);
        return (int) crc.getValue();
    }

    /** The pull of the image the source names now, resumed or started on the pulls' own threads. */
    private Pull startingPoint(String targetId, ContentSource source, RemoteImage image) {
        String node = Ids.requireNodeId(image.node());
        long size = image.sizeBytes();
        String identity = image.identity();
        Optional<String> basis = image.basis();
        if (size < 0
                || identity.isEmpty()
                || identity.length() > MAX_IDENTITY_CHARS
                || basis.map(String::length).orElse(1) > MAX_IDENTITY_CHARS) {
            throw StorageException.internal(
                    "node %s answered for %s a size of %d bytes and an identity of %d characters: "
                            + "not an image; look at the driver's log on node %s",
                    node, TransferIds.describe(source), size, identity.length(), node);
        }
        Pull wanted = new Pull(node, source, identity, size, 0, basis);
        Path file = imagePath(targetId);
        return blocking.call(CALL_DEADLINE, "preparing " + file, () -> resumeOrStart(targetId, wanted));
    }

    /**
     * The progress to continue from: the recorded one when it is of the same source image (and,
     * unless finished, on the same basis) and its image is there at the size; a delta round's
     * start when the source sends only what changed since the image held; else a new, empty image
     * of the source's size (its promise held before it is made) and a record of nothing done.
     */
    private Pull resumeOrStart(String targetId, Pull wanted) {
        ContentSource source = wanted.source();
        long size = wanted.sizeBytes();
        Path file = imagePath(targetId);
        Optional<Pull> recorded = recorded(targetId);
        Optional<Pull> held = recorded.filter(pull -> sizeIs(file, pull.sizeBytes()));
        if (held.isPresent()
                && held.get().ofSameImage(wanted)
                && (held.get().finished() || held.get().basis().equals(wanted.basis()))) {
            if (!held.get().finished()) {
                log.info(
                        "continuing the pull of {} for volume {} at offset {} of {}",
                        TransferIds.describe(source),
                        targetId,
                        held.get().doneBytes(),
                        size);
            }
            return held.get();
        }
        if (wanted.basis().isPresent()) {
            return deltaRound(targetId, held, wanted);
        }
        recorded.ifPresent(before -> log.info(
                "starting the pull of {} for volume {} over: the image pulled before was {} (identity {}), the "
                        + "source's is now {}",
                TransferIds.describe(source),
                targetId,
                TransferIds.describe(before.source()),
                before.identity(),
                wanted.identity()));
        discard(targetId);
        return pool.capacity()
                .promising(file, size, Allocation.SPARSE, "the image pulled for volume " + targetId, () -> {
                    pool.images().create(file, size, Allocation.SPARSE);
                    records.write(targetId, wanted);
                    return wanted;
                });
    }

    /**
     * A round that writes only what changed since the image held whole, recorded before its first
     * write; refused, the held pull discarded, when the pull holds no such image (another round,
     * a mix, another size: the volume was expanded): the next pull, without a basis, starts over.
     */
    private Pull deltaRound(String targetId, Optional<Pull> held, Pull wanted) {
        String basis = wanted.basis().orElseThrow();
        boolean applies = held.isPresent()
                && held.get().finished()
                && held.get().source().equals(wanted.source())
                && held.get().identity().equals(basis)
                && held.get().sizeBytes() == wanted.sizeBytes();
        if (!applies) {
            discard(targetId);
            throw StorageException.precondition(
                    "node %s sent for volume %s only what changed in %s since its image %s (%d bytes), which this "
                            + "node does not hold whole (it held %s); what it held is discarded, and the next round "
                            + "pulls the whole image",
                    wanted.node(),
                    targetId,
                    TransferIds.describe(wanted.source()),
                    basis,
                    wanted.sizeBytes(),
                    held.map(pull -> "image " + pull.identity() + ", " + pull.doneBytes() + " of " + pull.sizeBytes()
                                    + " bytes")
                            .orElse("nothing"));
        }
        log.info(
                "pulling what changed in {} since image {} for volume {}: image {}",
                TransferIds.describe(wanted.source()),
                basis,
                targetId,
                wanted.identity());
        records.write(targetId, wanted);
        return wanted;
    }

    /**
     * The identity to open the source on for the next round: the image the pull holds whole, or
     * the basis of a delta round under way (which the source sends again); empty when the pull
     * holds no whole image and must be sent every range that holds data.
     */
    public Optional<String> basisFor(String targetId) {
        TransferIds.requireVolumeId(targetId);
        Path file = imagePath(targetId);
        return blocking.call(
                CALL_DEADLINE,
                "reading the progress of " + file,
                () -> recorded(targetId)
                        .filter(pull -> sizeIs(file, pull.sizeBytes()))
                        .flatMap(pull -> pull.finished() ? Optional.of(pull.identity()) : pull.basis()));
    }

    /** The recorded progress; one that cannot be read is of no use, and the pull starts over. */
    private Optional<Pull> recorded(String targetId) {
        try {
            return records.read(targetId);
        } catch (StorageException e) {
            log.warn(
                    "the progress of the pull for volume {} cannot be read ({}); starting over",
                    targetId,
                    e.getMessage());
            return Optional.empty();
        }
    }

    /**
     * Makes the volume {@code spec} names from its finished pull: moved into place as its image
     * ({@link dev.blockpool.pool.Volumes#createFromImport}), then the pull's record removed. The
     * volume as it is when it already exists; PRECONDITION when no finished pull of
     * {@code spec.source()} is here.
     */
    public Volume createVolume(VolumeSpec spec) {
        String targetId = Ids.volumeIdFor(spec.name());
        if (pool.volumes().find(targetId).isEmpty()) {
            finishedPull(targetId, spec.source(), "CreateVolume pulls it again");
        }
        Volume volume = pool.volumes().createFromImport(spec, imagePath(targetId));
        records.delete(targetId);
        return volume;
    }

    /**
     * Makes {@code moved}, another node's volume, this pool's from its finished pull: the same ID
     * and record (not one derived from a new name), committed as any volume ({@link
     * dev.blockpool.pool.Volumes#createMoved}), then the pull's record removed. The volume as it is
     * when this move committed it before; PRECONDITION when no finished pull of the volume, at its
     * size, is here.
     */
    public Volume commitMoved(Volume moved) {
        String volumeId = TransferIds.requireVolumeId(moved.id());
        if (pool.volumes().find(volumeId).isEmpty()) {
            String retry = "run the move's last round again";
            Pull pull = finishedPull(volumeId, Optional.of(ContentSource.volume(volumeId)), retry);
            if (pull.sizeBytes() != moved.capacityBytes()) {
                throw StorageException.precondition(
                        "the image pulled for volume %s is %d bytes, but the volume is %d bytes (expanded since); %s",
                        volumeId, pull.sizeBytes(), moved.capacityBytes(), retry);
            }
        }
        Volume volume = pool.volumes().createMoved(moved, imagePath(volumeId));
        records.delete(volumeId);
        return volume;
    }

    /** The finished pull of {@code source} for {@code targetId}; PRECONDITION, saying {@code retry}, when there is none. */
    private Pull finishedPull(String targetId, Optional<ContentSource> source, String retry) {
        Pull pull = recorded(targetId)
                .filter(Pull::finished)
                .filter(done -> source.equals(Optional.of(done.source())))
                .orElseThrow(() -> StorageException.precondition(
                        "volume %s has no finished pull of %s to be made from; %s",
                        targetId, source.map(TransferIds::describe).orElse("a source"), retry));
        log.debug("making volume {} from {} pulled from node {}", targetId, imagePath(targetId), pull.node());
        return pull;
    }

    /** How far the pull for {@code targetId} has come, when one was started and not yet made a volume. */
    public Optional<Long> doneBytes(String targetId) {
        return Ids.isVolumeId(targetId) ? recorded(targetId).map(Pull::doneBytes) : Optional.empty();
    }

    /** Removes what a pull for {@code targetId} left: its record, then its image. */
    public void discard(String targetId) {
        TransferIds.requireVolumeId(targetId);
        Path file = imagePath(targetId);
        pool.capacity().changing(file, () -> {
            records.delete(targetId);
            return DurableFiles.delete(file);
        });
    }

    private Path imagePath(String targetId) {
        return directory.resolve(targetId + ".img");
    }

    private static boolean sizeIs(Path file, long size) {
        try {
            return Files.size(file) == size;
        } catch (IOException e) {
            return false; // gone: the pull starts over
        }
    }

    private FileChannel open(Path file) {
        return blocking.call(CALL_DEADLINE, "opening " + file, () -> {
            try {
                return FileChannel.open(file, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);
            } catch (IOException e) {
                throw StorageException.io(e, "cannot open %s", file);
            }
        });
    }

    /** One pull's writes into its image and records of its progress. */
    private final class Writer implements AutoCloseable {
        final String targetId;
        final Pull pull;
        final Path file;
        final FileChannel channel;
        final String what;
        final Progress progress;
        /** Every byte below is written (not yet flushed, maybe). */
        long done;
        /** Every byte below is flushed, and recorded. */
        long recordedBytes;
        /** Bytes written since the last record: what a crash would have the next pull copy again. */
        long unrecordedWrites;
        /** Bytes written by this pull, whatever was recorded. */
        long writtenBytes;
        /** Opened at a delta round's first range that became a hole. */
        HolePunch holes;
        /** False once the filesystem could not punch a hole: zeros are written instead. */
        boolean punching = true;

        Writer(String targetId, Pull pull, Path file, FileChannel channel, String what, Progress progress) {
            this.targetId = targetId;
            this.pull = pull;
            this.file = file;
            this.channel = channel;
            this.what = what;
            this.progress = progress;
            this.done = pull.doneBytes();
            this.recordedBytes = pull.doneBytes();
        }

        void write(long offset, byte[] data) {
            blocking.run(CALL_DEADLINE, "writing " + data.length + " bytes at " + offset + " of " + what, () -> {
                // a whole pull writes only data; a delta's zeros are a range that became a hole
                if (pull.basis().isPresent() && allZeros(data) && punched(offset, data.length)) {
                    return;
                }
                ByteBuffer buffer = ByteBuffer.wrap(data);
                try {
                    while (buffer.hasRemaining()) {
                        channel.write(buffer, offset + buffer.position());
                    }
                } catch (IOException e) {
                    throw StorageException.io(e, "cannot write the image pulled for volume %s", targetId);
                }
            });
            unrecordedWrites += data.length;
            writtenBytes += data.length;
            TestKillPoint.reached("pull.chunk-written");
        }

        private boolean punched(long offset, int length) {
            if (!punching) {
                return false;
            }
            if (holes == null) {
                holes = new HolePunch(file);
            }
            punching = holes.punch(offset, length);
            return punching;
        }

        @Override
        public void close() {
            if (holes != null) {
                holes.close();
            }
        }

        /** Everything below {@code offset} is written; recorded once enough was written since the last record. */
        void completed(long offset) {
            done = offset;
            if (unrecordedWrites >= RECORD_EVERY_BYTES) {
                record(done);
            }
        }

        /** Flushes the image, then records that every byte below {@code offset} is here. */
        void record(long offset) {
            done = offset;
            blocking.run(CALL_DEADLINE, "recording the progress of the pull of " + what, () -> {
                try {
                    channel.force(true);
                } catch (IOException e) {
                    throw StorageException.io(e, "cannot flush the image pulled for volume %s", targetId);
                }
                records.write(targetId, pull.at(offset));
            });
            recordedBytes = offset;
            unrecordedWrites = 0;
            progress.reached(offset, pull.sizeBytes());
        }

        /** Records what was written before {@code failure}, so that the next pull need not copy it again. */
        void recordQuietly(StorageException failure) {
            if (done > recordedBytes) {
                try {
                    record(done);
                } catch (StorageException e) {
                    failure.addSuppressed(e);
                }
            }
        }

        /** A source that answered what no image can be: refused, and what it sent so far kept for a better answer. */
        StorageException refused(String format, Object... args) {
            return StorageException.internal(
                    "the pull of %s for volume %s is refused: %s; look at the driver's log on node %s",
                    what, targetId, format.formatted(args), pull.node());
        }
    }
}
