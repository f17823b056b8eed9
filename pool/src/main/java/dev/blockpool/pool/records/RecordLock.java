package dev.blockpool.pool.records;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * The pool's lock for changing records: whoever reads a record to decide how to change it holds
 * it until the change is written, in whichever process, on whichever host, so that no other
 * change can land in between and be lost. It is held for the records only (milliseconds), never
 * while an image is copied. Reentrant within a thread, so a change may be made of smaller ones.
 */
public final class RecordLock {

    public static final String FILE_NAME = "records.lock";
    /** Far longer than any record change takes; a holder that long is stuck, and the caller retries. */
    private static final Duration PATIENCE = Duration.ofSeconds(30);

    private final Path file;
    /** The threads of this process queue here, so that only one of them at a time asks for the file's lock. */
    private final ReentrantLock inProcess = new ReentrantLock();

    public RecordLock(Path poolRoot) {
        this.file = poolRoot.resolve(FILE_NAME);
    }

    public <T> T locked(Supplier<T> change) {
        inProcess.lock();
        try {
            if (inProcess.getHoldCount() > 1) {
                return change.get();
            }
            PoolLockFile held = PoolLockFile.take(file, PATIENCE);
            try {
                return change.get();
            } finally {
                held.close();
            }
        } finally {
            inProcess.unlock();
        }
    }
}
