package dev.blockpool.pool;

import dev.blockpool.common.GrowthMarker;
import dev.blockpool.common.OperationLocks;
import dev.blockpool.common.StorageException;
import dev.blockpool.pool.records.DurableFiles;
import dev.blockpool.pool.records.RecordCodec;
import dev.blockpool.pool.records.RecordStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Start-up clean-up of what a crash can leave behind: temporary record files (at once when
 * their writer's lock is free, see {@link DurableFiles}), images
 * whose record was never committed (a create that did not finish) or was already removed (a
 * delete that did not finish), and member snapshots whose group snapshot has no record (a
 * group create or delete that did not finish). An image whose record is there is never touched, and a record
 * that cannot be parsed, or was written by a newer driver, is left alone with an error in the
 * log: losing data is worse than keeping a stray file.
 *
 * <p>Transfers between nodes leave files of their own: an image being pulled ({@code incoming/})
 * goes once its volume exists, or once no pull has touched it for {@link #TRANSFER_IDLE} (a
 * CreateVolume that the CO stopped retrying); the frozen copies of an export ({@code outgoing/})
 * go once no pull has used them for as long, and an export's copy without its record (a freeze
 * cut short) after the settle time.
 */
final class Reconciler {

    private static final Logger log = LoggerFactory.getLogger(Reconciler.class);
    /** The directories whose records are written through {@link DurableFiles}. */
    private static final List<String> RECORD_DIRECTORIES = List.of("volumes", "snapshots", "groups", "nodes");

    /** The directory of the frozen copies of volumes other nodes pull. */
    static final String OUTGOING = "outgoing";
    /** How long an incoming or outgoing transfer may go untouched before no one is taken to want it. */
    static final Duration TRANSFER_IDLE = Duration.ofHours(24);

    private final Path root;
    private final Instant olderThan;
    private final Instant idleSince;
    private final OperationLocks locks;
    private final ReconcileSteps steps;

    /**
     * Leaves alone files modified after {@code olderThan} and IDs with an operation in {@code
     * locks}, and transfers touched after {@code idleSince}; tells {@code steps} before each step.
     */
    Reconciler(Path root, Instant olderThan, Instant idleSince, OperationLocks locks, ReconcileSteps steps) {
        this.root = root;
        this.olderThan = olderThan;
        this.idleSince = idleSince;
        this.locks = locks;
        this.steps = steps;
    }

    void run() {
        for (String dir : RECORD_DIRECTORIES) {
            steps.before("list " + dir);
            for (Path file : list(root.resolve(dir))) {
                String name = file.getFileName().toString();
                if (name.endsWith(DurableFiles.HELD_SUFFIX)) {
                    // only under its lock, however old: its writer may be alive, stuck on the pool
                    steps.before("check " + dir + "/" + name);
                    if (DurableFiles.removeIfAbandoned(file)) {
                        logAbandoned(file);
                    }
                } else if (name.endsWith(DurableFiles.TEMP_SUFFIX) && settled(file)) {
                    steps.before("remove " + dir + "/" + name);
                    remove(file, "temporary file left by an interrupted write");
                } else if (name.endsWith(ImageRecords.IMAGE_SUFFIX) && settled(file)) {
                    steps.before("check " + dir + "/" + name);
                    reconcileImage(file, name);
                } else if (name.endsWith(ImageRecords.IMAGE_SUFFIX + GrowthMarker.SUFFIX) && settled(file)) {
                    steps.before("check " + dir + "/" + name);
                    reconcileGrowthMarker(file, name);
                } else if (dir.equals("snapshots") && name.endsWith(ImageRecords.RECORD_SUFFIX) && settled(file)) {
                    steps.before("check " + dir + "/" + name);
                    reconcileMember(file, name);
                }
            }
        }
        steps.before("list " + PoolCapacity.INCOMING);
        transfers(root.resolve(PoolCapacity.INCOMING)).forEach(this::reconcileIncoming);
        steps.before("list " + OUTGOING);
        transfers(root.resolve(OUTGOING)).forEach(this::reconcileOutgoing);
    }

    /** The files of one transfer: those of a directory whose names start with {@code id} and a dot. */
    private record TransferFiles(String id, List<Path> files) {

        Optional<Path> record() {
            return files.stream()
                    .filter(file -> file.getFileName().toString().equals(id + RecordStore.SUFFIX))
                    .findFirst();
        }
    }

    /** The files of {@code directory} by transfer, their temporary files of writers that are gone removed first. */
    private static List<TransferFiles> transfers(Path directory) {
        DurableFiles.removeAbandoned(directory).forEach(Reconciler::logAbandoned);
        Map<String, List<Path>> byId = new TreeMap<>();
        for (Path file : list(directory)) {
            String name = file.getFileName().toString();
            if (!name.endsWith(DurableFiles.TEMP_SUFFIX) && name.indexOf('.') > 0) {
                byId.computeIfAbsent(name.substring(0, name.indexOf('.')), id -> new ArrayList<>())
                        .add(file);
            }
        }
        return byId.entrySet().stream()
                .map(entry -> new TransferFiles(entry.getKey(), entry.getValue()))
                .toList();
    }

    /**
     * An image being pulled for the volume of its name: no longer wanted once that volume exists
     * (its import committed, or it was made otherwise), or once no pull has touched it for
     * {@link #TRANSFER_IDLE}; an image without its progress record, after the settle time.
     */
    private void reconcileIncoming(TransferFiles transfer) {
        if (!Ids.isVolumeId(transfer.id())) {
            return; // not the driver's: left alone
        }
        boolean volumeExists = Files.exists(root.resolve("volumes").resolve(transfer.id() + RecordStore.SUFFIX));
        boolean settled = transfer.files().stream().allMatch(this::settled);
        if (!(settled && (volumeExists || transfer.record().isEmpty()) || idle(transfer))) {
            return;
        }
        unlessInUse(
                transfer.id(),
                () -> removeTransfer(
                        transfer,
                        volumeExists
                                ? "an image pulled for a volume that exists"
                                : "an image pulled for a volume no call has asked for since " + idleSince));
    }

    /** An export's frozen copies: once no pull has used them for {@link #TRANSFER_IDLE}, or a freeze cut short. */
    private void reconcileOutgoing(TransferFiles transfer) {
        if (idle(transfer)) {
            removeTransfer(transfer, "an export no pull has used since " + idleSince);
        } else if (transfer.record().isEmpty() && transfer.files().stream().allMatch(this::settled)) {
            removeTransfer(transfer, "a frozen copy without its record: an interrupted export");
        }
    }

    private boolean idle(TransferFiles transfer) {
        return transfer.files().stream().allMatch(file -> touchedBefore(file, idleSince));
    }

    /** Its record first, so that no record ever names a file that is gone. */
    private static void removeTransfer(TransferFiles transfer, String why) {
        transfer.record().ifPresent(record -> remove(record, why));
        transfer.files().stream()
                .filter(file -> !transfer.record().equals(Optional.of(file)))
                .forEach(file -> remove(file, why));
    }

    /**
     * Removes the temporary record files whose writers are gone (a kill's leftovers) from every
     * record directory under {@code root}: the pool's opening does, so that they go at the next
     * start even when its reconcile does not get that far.
     */
    static void removeAbandonedTemporaryFiles(Path root) {
        for (String dir : RECORD_DIRECTORIES) {
            DurableFiles.removeAbandoned(root.resolve(dir)).forEach(Reconciler::logAbandoned);
        }
    }

    private static void logAbandoned(Path temp) {
        log.warn("reconcile: removed {} (temporary file of a writer that is gone)", temp);
    }

    /** A member snapshot whose group has no record: its record, then its image, as a delete removes them. */
    private void reconcileMember(Path record, String name) {
        String id = name.substring(0, name.length() - ImageRecords.RECORD_SUFFIX.length());
        if (!Ids.isSnapshotId(id)
                || RecordStore.problem(record, RecordCodecs.SNAPSHOT).isPresent()) {
            return; // an unreadable one is reported with its image
        }
        RecordStore<Snapshot> store = new RecordStore<>(record.getParent(), RecordCodecs.SNAPSHOT);
        RecordStore<GroupSnapshot> groups = new RecordStore<>(root.resolve("groups"), RecordCodecs.GROUP_SNAPSHOT);
        unlessInUse(
                id,
                () -> store.read(id)
                        .flatMap(Snapshot::groupSnapshotId)
                        .filter(group -> !groups.exists(group))
                        .ifPresent(group -> {
                            log.warn(
                                    "reconcile: removing snapshot {} of group snapshot {}, which has no record "
                                            + "(an interrupted group create or delete)",
                                    id,
                                    group);
                            store.delete(id);
                            DurableFiles.delete(record.resolveSibling(id + ImageRecords.IMAGE_SUFFIX));
                        }));
    }

    /** A growth mark whose image is gone: left by a delete that a crash cut short. */
    private void reconcileGrowthMarker(Path marker, String name) {
        String id = name.substring(0, name.length() - (ImageRecords.IMAGE_SUFFIX + GrowthMarker.SUFFIX).length());
        Path image = marker.resolveSibling(id + ImageRecords.IMAGE_SUFFIX);
        unlessInUse(id, () -> {
            if (!Files.exists(image)) {
                remove(marker, "growth mark of an image that is gone");
            }
        });
    }

    private void reconcileImage(Path image, String name) {
        String id = name.substring(0, name.length() - ImageRecords.IMAGE_SUFFIX.length());
        Path record = image.resolveSibling(id + ImageRecords.RECORD_SUFFIX);
        if (!Files.exists(record)) {
            unlessInUse(id, () -> {
                if (!Files.exists(record)) {
                    remove(image, "image without a record: an interrupted create or delete");
                }
            });
            return;
        }
        RecordCodec<?> codec = Ids.isSnapshotId(id) ? RecordCodecs.SNAPSHOT : RecordCodecs.VOLUME;
        RecordStore.problem(record, codec)
                .ifPresent(problem -> log.error(
                        "reconcile: keeping {} and its record for an operator to inspect: {}", image, problem));
    }

    /** Runs {@code work} holding the ID's lock; an ID a call is working on is left to the next reconcile. */
    private void unlessInUse(String id, Runnable work) {
        try {
            locks.withLock(work, id);
        } catch (StorageException e) {
            if (e.kind() != StorageException.Kind.BUSY) {
                throw e;
            }
            log.debug("reconcile: {} is in use, leaving it", id);
        }
    }

    private boolean settled(Path file) {
        return touchedBefore(file, olderThan);
    }

    private static boolean touchedBefore(Path file, Instant instant) {
        try {
            return Files.getLastModifiedTime(file).toInstant().isBefore(instant);
        } catch (IOException e) {
            return false;
        }
    }

    private static void remove(Path file, String why) {
        log.warn("reconcile: removing {} ({})", file, why);
        DurableFiles.delete(file);
    }

    private static List<Path> list(Path dir) {
        try (Stream<Path> files = Files.list(dir)) {
            return files.toList();
        } catch (IOException e) {
            throw StorageException.io(e, "cannot list the pool directory %s", dir);
        } catch (UncheckedIOException e) {
            throw StorageException.io(e.getCause(), "cannot list the pool directory %s", dir);
        }
    }
}
