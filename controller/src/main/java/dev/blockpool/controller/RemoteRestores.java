package dev.blockpool.controller;

import dev.blockpool.common.StorageException;
import dev.blockpool.csi.CsiException;
import dev.blockpool.pool.ContentSource;
import dev.blockpool.pool.Volume;
import dev.blockpool.pool.VolumeSpec;
import dev.blockpool.pool.Volumes;
import dev.blockpool.pool.transfer.ImageImports;
import dev.blockpool.pool.transfer.RemoteImage;
import dev.blockpool.pool.transfer.TransferIds;
import io.grpc.Context;
import io.grpc.Deadline;
import java.time.Duration;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Restores and clones on a node-local pool whose source is in another node's pool: the source's
 * image is pulled into this pool in the background ({@link ImageImports}), a few pulls at once on
 * threads of their own, and CreateVolume waits for its pull only until shortly before its own
 * deadline. Until the pull is done it answers ABORTED with how far it has come, which
 * external-provisioner retries on the same node; a retry joins the pull under way for its volume
 * (one pull per target volume ID), and once the pull is done makes the volume of it and releases
 * the source's export. A pull that fails is answered with its error and forgotten: the next retry
 * starts a new one, which continues from what the failed one left.
 */
final class RemoteRestores {

    private static final Logger log = LoggerFactory.getLogger(RemoteRestores.class);

    /** Pulls that run at once: each streams a whole image over the network and into the pool. */
    static final int PULLS_AT_ONCE = 2;
    /** How long before its deadline a call that waits for its pull answers. */
    static final Duration ANSWER_BEFORE_DEADLINE = Duration.ofSeconds(2);
    /** How long a call without a deadline waits for its pull. */
    static final Duration WAIT_WITHOUT_DEADLINE = Duration.ofSeconds(30);

    private final ImageImports imports;
    private final OtherNodes otherNodes;
    private final Duration waitWithoutDeadline;
    private final ConcurrentHashMap<String, Pull> pulls = new ConcurrentHashMap<>();
    private final ExecutorService threads = Executors.newFixedThreadPool(
            PULLS_AT_ONCE, Thread.ofPlatform().name("pull-", 0).daemon().factory());

    RemoteRestores(ImageImports imports, OtherNodes otherNodes, Duration waitWithoutDeadline) {
        this.imports = imports;
        this.otherNodes = otherNodes;
        this.waitWithoutDeadline = waitWithoutDeadline;
    }

    /** One pull of a source image for a target volume, under way or ended. */
    static final class Pull {
        private final String targetId;
        private final ContentSource source;
        private final String node;
        private final long sizeBytes;
        private final CompletableFuture<Void> finished = new CompletableFuture<>();
        private volatile long doneBytes;

        private Pull(String targetId, ContentSource source, String node, long sizeBytes) {
            this.targetId = targetId;
            this.source = source;
            this.node = node;
            this.sizeBytes = sizeBytes;
        }

        /** The source's size: a restore's size when CreateVolume asks for none. */
        long sizeBytes() {
            return sizeBytes;
        }

        private String describe() {
            String doing = source.kind() == ContentSource.Kind.SNAPSHOT ? "restoring" : "cloning";
            return doing + " " + source.kind().name().toLowerCase(Locale.ROOT) + " " + source.id() + " from node "
                    + node;
        }
    }

    /**
     * The pull of {@code source} for the volume {@code targetId}: the one under way, or a new one
     * when another node's pool holds the source; empty when none does. OUT_OF_RANGE, pulling
     * nothing, when the source is larger than {@code requestedBytes}.
     */
    Optional<Pull> pull(ContentSource source, String targetId, OptionalLong requestedBytes) {
        Pull under = pulls.get(targetId);
        if (under != null && under.source.equals(source)) {
            requestedBytes.ifPresent(bytes -> Volumes.requireFits(source, under.sizeBytes, bytes));
            return Optional.of(under);
        }
        String transferId = TransferIds.forVolume(targetId);
        Optional<RemoteImage> remote = otherNodes.open(source, transferId);
        if (remote.isEmpty()) {
            return Optional.empty();
        }
        long sizeBytes = remote.get().sizeBytes();
        if (requestedBytes.isPresent() && sizeBytes > requestedBytes.getAsLong()) {
            remote.get().close();
            release(remote.get().node(), source, targetId);
            Volumes.requireFits(source, sizeBytes, requestedBytes.getAsLong());
        }
        Pull pull = new Pull(targetId, source, remote.get().node(), sizeBytes);
        Pull raced = pulls.putIfAbsent(targetId, pull);
        if (raced != null) {
            remote.get().close(); // another call started it meanwhile
            return Optional.of(raced);
        }
        log.info("{} for volume {} ({} bytes)", pull.describe(), targetId, pull.sizeBytes);
        threads.execute(() -> run(pull, remote.get()));
        return Optional.of(pull);
    }

    private void run(Pull pull, RemoteImage remote) {
        try (remote) {
            imports.pull(pull.targetId, pull.source, remote, (done, size) -> pull.doneBytes = done);
            pull.finished.complete(null);
        } catch (RuntimeException | Error e) {
            log.warn("{} for volume {} failed: {}", pull.describe(), pull.targetId, e.getMessage());
            pull.finished.completeExceptionally(e);
        }
    }

    /**
     * The volume {@code make} makes of {@code pull} once the pull is done, waiting for it until
     * shortly before this call's deadline: ABORTED, saying how far it has come, while it runs; its
     * error once it failed. The source's export is released once the volume exists.
     */
    Volume finish(Pull pull, Supplier<Volume> make) {
        try {
            pull.finished.get(waitingTime().toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw CsiException.aborted(
                    "%s: %d of %d bytes copied; the call is retried", pull.describe(), pull.doneBytes, pull.sizeBytes);
        } catch (ExecutionException e) {
            pulls.remove(pull.targetId, pull);
            if (e.getCause() instanceof RuntimeException failure) {
                throw failure;
            }
            throw StorageException.internal(
                    e.getCause(), "%s failed: %s", pull.describe(), e.getCause().getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw CsiException.aborted("%s: interrupted while waiting; the call is retried", pull.describe());
        }
        Volume volume;
        try {
            volume = make.get();
        } finally {
            pulls.remove(pull.targetId, pull);
        }
        release(pull.node, pull.source, pull.targetId);
        return volume;
    }

    /** The volume {@code spec} made of its finished pull; see {@link ImageImports#createVolume}. */
    Volume createVolume(VolumeSpec spec) {
        return imports.createVolume(spec);
    }

    /** Drops the export at the source; a source that cannot be reached removes it itself after a day. */
    private void release(String node, ContentSource source, String targetId) {
        try {
            otherNodes.release(node, TransferIds.forVolume(targetId));
        } catch (RuntimeException e) {
            log.warn(
                    "cannot release the export of {} for volume {} on node {} ({}); that node removes it after a day",
                    source.id(),
                    targetId,
                    node,
                    e.getMessage());
        }
    }

    /** Until shortly before the call's deadline, or a bound without one. */
    private Duration waitingTime() {
        Deadline deadline = Context.current().getDeadline();
        if (deadline == null) {
            return waitWithoutDeadline;
        }
        Duration left =
                Duration.ofNanos(deadline.timeRemaining(TimeUnit.NANOSECONDS)).minus(ANSWER_BEFORE_DEADLINE);
        return left.isNegative() ? Duration.ZERO : left;
    }
}
