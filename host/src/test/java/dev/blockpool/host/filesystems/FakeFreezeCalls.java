package dev.blockpool.host.filesystems;

import dev.blockpool.common.StorageException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;

/**
 * The kernel's freezes as a set of frozen mount points, with the failures a test injects: a
 * thaw refused, a freeze that waits for a writer until the test lets it go. It logs each call.
 */
public final class FakeFreezeCalls implements FreezeCalls {

    public final Set<Path> frozen = ConcurrentHashMap.newKeySet();
    public final List<String> log = new CopyOnWriteArrayList<>();
    /** While set, each FITHAW fails with it. */
    public volatile RuntimeException thawFailure;
    /** A FIFREEZE of a mount point named here waits until its latch is counted down (a writer holding it). */
    public final Map<Path, CountDownLatch> writers = new ConcurrentHashMap<>();
    /** Counted down once a FIFREEZE waits for a writer. */
    public final CountDownLatch waitingForWriter = new CountDownLatch(1);
    /** Counted down whenever a FITHAW has returned. */
    public volatile CountDownLatch thawed = new CountDownLatch(1);

    @Override
    public void freeze(Path mountPoint) {
        log.add("FIFREEZE " + mountPoint.getFileName());
        CountDownLatch writer = writers.remove(mountPoint);
        if (writer != null) {
            waitingForWriter.countDown();
            try {
                writer.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw StorageException.internal("interrupted");
            }
        }
        if (!frozen.add(mountPoint)) {
            throw StorageException.internal("cannot freeze the file system mounted at %s: EBUSY", mountPoint);
        }
    }

    @Override
    public boolean thaw(Path mountPoint) {
        log.add("FITHAW " + mountPoint.getFileName());
        RuntimeException failure = thawFailure;
        if (failure != null) {
            throw failure;
        }
        boolean was = frozen.remove(mountPoint);
        thawed.countDown();
        return was;
    }
}
