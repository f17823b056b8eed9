package dev.blockpool.identity;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.StorageException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A readiness that looks at the pool (its directory, the claims in it) on a {@link BlockingCalls}
 * thread, for at most {@link #DEADLINE}. livenessprobe gives Probe 1 s (its default
 * {@code --probe-timeout}) and restarts a driver that does not answer in time, and no restart
 * makes a pool answer whose server is gone (a process waiting in the kernel on a hard NFS mount may
 * not even end). So a pool that does not answer is no reason to be not ready: it is logged, the
 * calls that need it are answered UNAVAILABLE, and its health calls report it. One look at a
 * time: while one is left waiting in the kernel, Probe starts no other.
 */
public final class PoolLookWithin implements Readiness {

    private static final Logger log = LoggerFactory.getLogger(PoolLookWithin.class);
    /** Half of livenessprobe's default timeout for the whole Probe. */
    static final Duration DEADLINE = Duration.ofMillis(500);

    private final Readiness looking;
    private final BlockingCalls blocking;
    private final Path pool;
    private final AtomicBoolean underWay = new AtomicBoolean();

    /** {@code looking}: the readiness that looks at the pool at {@code pool}. */
    public PoolLookWithin(Readiness looking, BlockingCalls blocking, Path pool) {
        this.looking = looking;
        this.blocking = blocking;
        this.pool = pool;
    }

    @Override
    public List<String> problems() {
        if (!underWay.compareAndSet(false, true)) {
            return silent("an earlier look is still waiting");
        }
        try {
            return blocking.answerWithin(DEADLINE, "Probe's look at the pool " + pool, () -> {
                        try {
                            return looking.problems();
                        } finally {
                            underWay.set(false);
                        }
                    })
                    .orElseGet(() -> silent("no answer within " + BlockingCalls.describe(DEADLINE)));
        } catch (StorageException e) { // refused: every thread for calls that can hang is stuck
            underWay.set(false);
            return silent(e.getMessage());
        }
    }

    private List<String> silent(String why) {
        log.warn(
                "Probe's look at the pool {} gets no answer ({}): calls that need the pool are answered UNAVAILABLE "
                        + "until it answers; ready all the same, since a restart would not make it answer",
                pool,
                why);
        return List.of();
    }
}
