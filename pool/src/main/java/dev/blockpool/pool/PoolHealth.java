package dev.blockpool.pool;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.FilesystemAnswer;
import dev.blockpool.common.HealthProblem;
import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import dev.blockpool.pool.records.Page;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What is wrong with the pool and its volumes, read from the pool as it is now: nothing is
 * assumed healthy. The pool's own problems (its directory gone, its filesystem read-only or
 * full) are every volume's; a volume adds its record and its image.
 */
public final class PoolHealth {

    private static final Logger log = LoggerFactory.getLogger(PoolHealth.class);

    /**
     * Below this much free space a sparse volume's next writes into holes may fail with ENOSPC:
     * the pool is called full. A filesystem keeps a little to itself even when "full".
     */
    static final long FULL_BELOW_BYTES = 1 << 20;
    /** A thin pool short of room: sparse volumes' writes may soon fail. */
    static final String NEARLY_FULL = "PoolNearlyFull";
    /** The reason of every problem that makes the whole pool unusable. */
    private static final String UNAVAILABLE = "PoolUnavailable";

    private final Path root;
    private final Volumes volumes;
    private final PoolCapacity capacity;
    private final BlockingCalls blocking;
    private final Clock clock;
    private final Duration settleTime;
    private final Warnings warnings = new Warnings();

    /**
     * {@code settleTime}: how long an image longer than its record may be an expansion in
     * progress, or one interrupted that the resizer's retry completes, rather than a problem.
     */
    PoolHealth(
            Path root,
            Volumes volumes,
            PoolCapacity capacity,
            BlockingCalls blocking,
            Clock clock,
            Duration settleTime) {
        this.root = root;
        this.volumes = volumes;
        this.capacity = capacity;
        this.blocking = blocking;
        this.clock = clock;
        this.settleTime = settleTime;
    }

    /** A volume's problems; empty when none is known. */
    public record VolumeHealth(String volumeId, List<HealthProblem> problems) {
        public VolumeHealth {
            problems = List.copyOf(problems);
        }
    }

    /**
     * The problems of the pool itself, which every volume in it shares. Asked of its filesystem
     * with a deadline: a dead NFS server makes the pool unavailable, not the call hang.
     */
    public List<HealthProblem> pool() {
        Path volumesDir = root.resolve("volumes");
        Libc.StatFs statfs;
        switch (FilesystemAnswer.of(blocking, volumesDir)) {
            case FilesystemAnswer.Answered answered -> statfs = answered.statfs();
            case FilesystemAnswer.Failed failed
            when failed.missing() -> {
                return List.of(HealthProblem.inaccessible(
                        UNAVAILABLE,
                        "the pool directory " + volumesDir + " is gone: is the pool's filesystem mounted?"));
            }
            case FilesystemAnswer.Failed failed -> {
                return List.of(HealthProblem.inaccessible(
                        UNAVAILABLE, "the pool " + root + " cannot be read: " + failed.error()));
            }
            case FilesystemAnswer.Silent silent -> {
                return List.of(HealthProblem.inaccessible(
                        UNAVAILABLE,
                        "the pool's filesystem at " + root + " " + silent.describe()
                                + ": is its server (NFS, FUSE daemon) reachable?"));
            }
        }
        List<HealthProblem> problems = new ArrayList<>();
        if (statfs.readOnly()) {
            problems.add(HealthProblem.degraded(
                    "PoolReadOnly",
                    "the pool's filesystem at " + root + " is mounted read-only: writes to the volumes fail"));
        }
        if (statfs.availableBytes() < FULL_BELOW_BYTES) {
            problems.add(HealthProblem.degraded(
                    "PoolFull",
                    "the pool's filesystem at " + root + " has " + statfs.availableBytes()
                            + " bytes free: writes into a sparse volume's unwritten blocks fail"));
        } else {
            Optional<String> nearlyFull = capacity.nearlyFull(statfs.totalBytes(), statfs.availableBytes());
            nearlyFull.ifPresent(why -> problems.add(HealthProblem.degraded(NEARLY_FULL, why)));
            warnings.seen(nearlyFull);
        }
        return problems;
    }

    /** The volume's problems; NOT_FOUND when the pool has no such volume (and can still tell). */
    public VolumeHealth volume(String volumeId) {
        List<HealthProblem> pool = pool();
        if (unavailable(pool)) {
            return new VolumeHealth(volumeId, pool); // whether it exists cannot be known now
        }
        return of(volumeId, pool).orElseThrow(() -> StorageException.notFound("volume %s does not exist", volumeId));
    }

    /**
     * The volumes with a problem, a page at a time as {@link Volumes#page} reads them; a volume
     * whose record cannot be read is one of them.
     */
    public Page<VolumeHealth> page(long from, int max) {
        List<HealthProblem> pool = pool();
        requireAvailable(pool);
        return volumes.records()
                .pageOf(from, max, id -> of(id, pool).filter(h -> !h.problems().isEmpty()));
    }

    /** FAILED_PRECONDITION, saying why, when the pool is unavailable: for a call that must read it. */
    public static void requireAvailable(List<HealthProblem> pool) {
        unavailability(pool).ifPresent(p -> {
            throw StorageException.precondition("%s", p.message());
        });
    }

    /** Whether these problems include the pool's being unavailable: then nothing in it can be looked at. */
    public static boolean unavailable(List<HealthProblem> pool) {
        return unavailability(pool).isPresent();
    }

    private static Optional<HealthProblem> unavailability(List<HealthProblem> pool) {
        return pool.stream().filter(p -> p.reason().equals(UNAVAILABLE)).findFirst();
    }

    /** The volume's own problems and those of the pool that touch it; empty when there is no such volume. */
    private Optional<VolumeHealth> of(String volumeId, List<HealthProblem> pool) {
        Optional<Volume> volume;
        try {
            volume = volumes.find(volumeId);
        } catch (StorageException e) {
            return Optional.of(new VolumeHealth(
                    volumeId, List.of(HealthProblem.inaccessible("MetadataUnreadable", e.getMessage()))));
        }
        if (volume.isEmpty()) {
            return Optional.empty();
        }
        List<HealthProblem> problems = new ArrayList<>(image(volume.get()));
        for (HealthProblem problem : pool) {
            // a preallocated image has every block it needs already
            if (!spaceProblem(problem) || volume.get().allocation() == Allocation.SPARSE) {
                problems.add(problem);
            }
        }
        return Optional.of(new VolumeHealth(volumeId, problems));
    }

    private static boolean spaceProblem(HealthProblem problem) {
        return problem.reason().equals("PoolFull") || problem.reason().equals(NEARLY_FULL);
    }

    /**
     * Says at ERROR when the pool comes near to full and at INFO when it has room again, once
     * each: the line an operator's log alerting turns into an event.
     */
    private final class Warnings {
        private boolean warned;

        synchronized void seen(Optional<String> nearlyFull) {
            if (nearlyFull.isPresent() && !warned) {
                log.error("{}", nearlyFull.get());
            } else if (nearlyFull.isEmpty() && warned) {
                log.info("the pool's filesystem at {} has room again above its warning level", root);
            }
            warned = nearlyFull.isPresent();
        }
    }

    /**
     * Whether an image longer than the record read is an expansion's: it grows the image first
     * and its record after, so a record read before it may be older than the image, and a kill
     * between the two leaves the image longer until the resizer's retry. The record is read again,
     * and an image changed within the settle time is an expansion still under way.
     */
    private boolean growing(Volume read, BasicFileAttributes image) {
        Optional<Volume> now = volumes.find(read.id());
        if (now.isPresent() && now.get().capacityBytes() >= image.size()) {
            return true;
        }
        return image.lastModifiedTime().toInstant().isAfter(clock.instant().minus(settleTime));
    }

    /** Whether the image still matches its record. */
    private List<HealthProblem> image(Volume volume) {
        Path image = volumes.imagePath(volume.id());
        BasicFileAttributes attributes;
        try {
            attributes = Files.readAttributes(image, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException e) {
            attributes = null;
        } catch (IOException e) {
            return List.of(HealthProblem.inaccessible(
                    "ImageUnreadable", "image file " + image + " cannot be read: " + e.getMessage()));
        }
        if (attributes == null || !attributes.isRegularFile()) {
            return List.of(HealthProblem.dataLoss("ImageMissing", "image file " + image + " is missing"));
        }
        long size = attributes.size();
        if (size < volume.capacityBytes()) {
            return List.of(HealthProblem.dataLoss(
                    "ImageTruncated",
                    "image file " + image + " is " + size + " bytes, expected " + volume.capacityBytes()
                            + ": its tail is lost"));
        }
        if (size > volume.capacityBytes() && growing(volume, attributes)) {
            return List.of();
        }
        if (size > volume.capacityBytes()) {
            return List.of(HealthProblem.degraded(
                    "ImageSizeMismatch",
                    "image file " + image + " is " + size + " bytes, expected " + volume.capacityBytes()));
        }
        return List.of();
    }
}
