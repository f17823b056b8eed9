package dev.blockpool.common;

import java.nio.file.Path;
import java.time.Duration;

/**
 * How a mounted filesystem answers when a health call looks at a directory of it: its attributes
 * (statx, which a shut down xfs answers with EIO) and its statfs, both on a {@link BlockingCalls}
 * thread, given up on after {@link #DEADLINE}: a dead NFS server or FUSE daemon is then a finding
 * the call reports, not a call that hangs.
 */
public sealed interface FilesystemAnswer {

    /**
     * How long a health or stats call waits for a filesystem: a healthy one answers in
     * microseconds, and the callers (external-health-monitor, kubelet) give up on the whole call
     * after some 15 s or more.
     */
    Duration DEADLINE = Duration.ofSeconds(5);

    /** It answered; what statfs says of it. */
    record Answered(Libc.StatFs statfs) implements FilesystemAnswer {}

    /** It answered with an error: {@code errno} and the system's words for it. */
    record Failed(int errno, String error) implements FilesystemAnswer {
        public boolean missing() {
            return errno == Libc.ENOENT || errno == Libc.ENOTDIR;
        }
    }

    /** It did not answer within {@link #DEADLINE}; the call is left waiting in the kernel. */
    record Silent() implements FilesystemAnswer {
        public String describe() {
            return "does not answer within " + BlockingCalls.describe(DEADLINE);
        }
    }

    /** Asks the filesystem of {@code directory} (not followed if it is a symlink itself). */
    static FilesystemAnswer of(BlockingCalls calls, Path directory) {
        return calls.answerWithin(DEADLINE, "a health check of " + directory, () -> {
                    try {
                        int fd = Libc.open(directory.toString(), Libc.O_PATH | Libc.O_DIRECTORY | Libc.O_NOFOLLOW, 0);
                        try {
                            Libc.stat(fd);
                            return (FilesystemAnswer) new Answered(Libc.fstatfs(fd));
                        } finally {
                            Libc.close(fd);
                        }
                    } catch (Libc.ErrnoException e) {
                        return new Failed(e.errno(), e.getMessage());
                    }
                })
                .orElseGet(Silent::new);
    }
}
