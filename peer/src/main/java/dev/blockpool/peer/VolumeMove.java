package dev.blockpool.peer;

import dev.blockpool.common.StorageException;
import dev.blockpool.common.TestKillPoint;
import dev.blockpool.pool.ContentSource;
import dev.blockpool.pool.Pool;
import dev.blockpool.pool.Volume;
import dev.blockpool.pool.transfer.ImageImports;
import dev.blockpool.pool.transfer.RemoteImage;
import dev.blockpool.pool.transfer.TransferIds;
import java.io.PrintStream;
import java.time.Duration;
import java.util.Optional;

/**
 * One volume moved from another node's pool into this node's (docs/moving.md), the steps {@code
 * blockpool-csi move} takes: rounds of the volume's image while its workload runs, each only what
 * changed since the one before; then, once the workload is stopped, a last round, the volume
 * committed here under its own ID and record, retired on the source and its transfer released.
 * Every step can be run again after any interruption: what this pool holds and the source keeps
 * say where the move stands, nothing else does. Until the commit the source's volume is
 * untouched.
 */
final class VolumeMove {

    /** The source still uses the volume: the operator stops its workload, then runs the move again. */
    static final class InUseOnSource extends RuntimeException {
        InUseOnSource(String message) {
            super(message);
        }
    }

    /** One round: the bytes it wrote here, and whether they were only what changed since the round before. */
    record Round(long writtenBytes, long sizeBytes, boolean delta) {}

    /** How long a round waits for the source to freeze the volume (PoolImageExports' own bound). */
    static final Duration FREEZE_WAIT = Duration.ofHours(1);
    /** Between two opens the source answered BUSY: each of them waited on the source already. */
    static final Duration BUSY_PAUSE = Duration.ofSeconds(1);

    private final Pool pool;
    private final ImageImports imports;
    private final PeerClient peers;
    private final String fromNode;
    private final String thisNode;
    private final String volumeId;
    private final PrintStream out;

    VolumeMove(
            Pool pool,
            ImageImports imports,
            PeerClient peers,
            String fromNode,
            String thisNode,
            String volumeId,
            PrintStream out) {
        this.pool = pool;
        this.imports = imports;
        this.peers = peers;
        this.fromNode = fromNode;
        this.thisNode = thisNode;
        this.volumeId = TransferIds.forVolume(volumeId);
        this.out = out;
    }

    /**
     * Rounds while the workload runs: until one writes fewer than {@code untilBelowBytes}, or
     * after {@code maxRounds}; the rounds made.
     */
    int copy(int maxRounds, long untilBelowBytes) {
        if (pool.volumes().find(volumeId).isPresent()) {
            throw StorageException.precondition(
                    "volume %s is committed on this node already: run the move with --final to retire it on node %s",
                    volumeId, fromNode);
        }
        described();
        for (int made = 1; made <= maxRounds; made++) {
            Round round = round(made);
            if (round.delta() && round.writtenBytes() < untilBelowBytes) {
                return made;
            }
        }
        return maxRounds;
    }

    /**
     * The move's end, once the workload is stopped: a last round frozen now, the volume committed
     * here, retired on the source, its transfer released. {@link InUseOnSource} while the source
     * still uses the volume.
     */
    void finish() {
        if (pool.volumes().find(volumeId).isEmpty()) {
            requireUnusedOnSource("");
            // The first round completes whatever round is under way, which the source may have frozen
            // while the workload still wrote; the second is opened on the first's image, which has
            // the source freeze the volume anew, after the check above.
            round(1);
            round(2);
            // the record as it is now: the one committed here, had it changed during the rounds
            Volume moved = requireUnusedOnSource(" (it was started again during the last round)");
            imports.commitMoved(moved);
            out.printf("committed volume %s on node %s%n", volumeId, thisNode);
            TestKillPoint.reached("move.committed");
        } else {
            out.printf("volume %s is committed on node %s already%n", volumeId, thisNode);
        }
        try {
            peers.retireVolume(fromNode, volumeId, thisNode);
        } catch (StorageException e) {
            if (e.kind() != StorageException.Kind.PRECONDITION) {
                throw e;
            }
            throw new InUseOnSource(("volume %s is committed on node %s, but node %s refuses to retire its copy: %s; "
                            + "whatever wrote to it there since the last round is not in this node's copy. Stop "
                            + "what uses it on node %s and run the move with --final again")
                    .formatted(volumeId, thisNode, fromNode, e.getMessage(), fromNode));
        }
        out.printf("retired volume %s on node %s%n", volumeId, fromNode);
        peers.release(fromNode, TransferIds.forVolume(volumeId));
        out.printf(
                "volume %s moved from node %s to node %s; point its PersistentVolume at node %s (docs/moving.md)%n",
                volumeId, fromNode, thisNode, thisNode);
    }

    /** Pulls the next round onto what this pool holds, and says what it wrote. */
    private Round round(int number) {
        ContentSource source = ContentSource.volume(volumeId);
        String transferId = TransferIds.forVolume(volumeId);
        RemoteImage image = opened(source, transferId);
        try (image) {
            long written = imports.pull(volumeId, source, image, (done, size) -> {});
            Round round = new Round(written, image.sizeBytes(), image.basis().isPresent());
            out.printf(
                    "round %d: %d bytes copied (%s, image of %d bytes)%n",
                    number,
                    round.writtenBytes(),
                    round.delta() ? "what changed since the round before" : "every range that holds data",
                    round.sizeBytes());
            return round;
        }
    }

    /**
     * The round's image, opened on the source once it has frozen it: a sparse copy of a large
     * volume on a pool without reflinks outlives one call, and the source answers BUSY, saying how
     * far it has come, until it is done.
     */
    private RemoteImage opened(ContentSource source, String transferId) {
        long deadline = System.nanoTime() + FREEZE_WAIT.toNanos();
        while (true) {
            try {
                return peers.open(source, transferId, imports.basisFor(volumeId))
                        .orElseThrow(() -> StorageException.notFound("node %s holds no volume %s", fromNode, volumeId));
            } catch (StorageException e) {
                if (e.kind() != StorageException.Kind.BUSY || System.nanoTime() > deadline) {
                    throw e;
                }
                out.printf("waiting for node %s: %s%n", fromNode, e.getMessage());
            }
            try {
                Thread.sleep(BUSY_PAUSE);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw StorageException.unavailable("interrupted while node %s freezes volume %s", fromNode, volumeId);
            }
        }
    }

    /** The volume on the source; NOT_FOUND when the source holds none (and this node has not committed it). */
    private PeerClient.SourceVolume described() {
        return peers.describeVolume(fromNode, volumeId)
                .orElseThrow(() -> StorageException.notFound(
                        "node %s holds no volume %s, and this node has not committed it: check the volume ID and the"
                                + " node",
                        fromNode, volumeId));
    }

    /** The volume's record on the source; {@link InUseOnSource} while something holds it there. */
    private Volume requireUnusedOnSource(String when) {
        PeerClient.SourceVolume described = described();
        Optional<String> holder = described.inUse();
        if (holder.isPresent()) {
            throw new InUseOnSource(
                    "volume %s is in use on node %s%s: %s; stop its workload (scale it to 0) and run the move with --final again"
                            .formatted(volumeId, fromNode, when, holder.get()));
        }
        return described.volume();
    }
}
