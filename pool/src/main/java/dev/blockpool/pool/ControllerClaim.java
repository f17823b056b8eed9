package dev.blockpool.pool;

import dev.blockpool.common.StorageException;
import dev.blockpool.pool.records.PoolLockFile;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One controller acts on a pool at a time: the one that holds {@code controller.lock} (a
 * {@link PoolLockFile}), which it keeps for its life. Another controller on the same pool, on
 * this host or another, stands by: its changes are refused with a message naming the holder,
 * and it takes over at its first call after the holder is gone (the lock dies with its process).
 * The sidecars' leader election already keeps a second controller idle; this holds when that is
 * bypassed (a second Deployment, a controller started by hand, a partitioned leader).
 */
public final class ControllerClaim {

    static final String FILE_NAME = "controller.lock";

    private static final Logger log = LoggerFactory.getLogger(ControllerClaim.class);

    private final Path file;
    private final Clock clock;
    private PoolLockFile held;
    /** Set once the driver stops: the pool is never taken again. */
    private boolean stopping;

    private boolean standingBy;

    ControllerClaim(Path poolRoot, Clock clock) {
        this.file = poolRoot.resolve(FILE_NAME);
        this.clock = clock;
    }

    /** Takes the pool for this controller if nobody holds it; PRECONDITION naming the holder when another does. */
    public synchronized void require() {
        if (held != null) {
            return;
        }
        if (stopping) {
            throw StorageException.precondition("this controller is stopping; it no longer acts on the pool");
        }
        held = PoolLockFile.tryTakeNoted(file, clock)
                .orElseThrow(() -> StorageException.precondition(
                        "another controller acts on the pool (%s); this one stands by until that one stops",
                        PoolLockFile.holder(file)));
        log.info("this controller now acts on the pool ({})", PoolLockFile.holder(file));
    }

    /** Why this controller may not act now, or empty when it may (taking the pool if it is free). */
    public Optional<String> problem() {
        try {
            require();
            return Optional.empty();
        } catch (StorageException e) {
            return Optional.of(e.getMessage());
        }
    }

    /**
     * Takes the pool if it is free, and says why this controller stands by when another holds
     * it; unlike {@link #problem()}, a stopped controller is not standing by (it has nothing to
     * take over). Logs once when it starts standing by.
     */
    public synchronized Optional<String> standingBy() {
        if (stopping) {
            return Optional.empty();
        }
        Optional<String> why = problem();
        if (why.isPresent() && !standingBy) {
            log.info("standing by: {}", why.get());
        }
        standingBy = why.isPresent();
        return why;
    }

    /** Lets another controller take the pool; this one takes it again at its next call. */
    public synchronized void release() {
        if (held != null) {
            held.close();
            held = null;
        }
    }

    /**
     * The driver has begun to stop: from now on this controller never takes the pool, however
     * late a call, a look of Probe's or a background task asks. A claim it holds stays until
     * {@link #close}, for the calls still being drained.
     */
    public synchronized void stopTaking() {
        stopping = true;
    }

    /**
     * Lets another controller take the pool for good (a driver stopping): from now on this one
     * never takes it again.
     */
    public synchronized void close() {
        stopTaking();
        release();
    }
}
