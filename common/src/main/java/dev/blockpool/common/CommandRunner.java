package dev.blockpool.common;

import java.time.Duration;
import java.util.List;

/**
 * Runs host commands (blkid, mkfs, e2fsck, cp, ...): an argument array, never a shell, with
 * a timeout. Behind an interface so the logic that decides what to run can be unit-tested.
 */
public interface CommandRunner {

    Duration DEFAULT_TIMEOUT = Duration.ofMinutes(2);

    /** The finished command; a command that could not start or timed out throws instead. */
    record Result(List<String> command, int exitCode, String stdout, String stderr) {
        public boolean ok() {
            return exitCode == 0;
        }

        /** One line for an error message: the command, its exit code and what it said. */
        public String describe() {
            String said = stderr.isBlank() ? stdout.strip() : stderr.strip();
            return "`%s` exited with %d%s"
                    .formatted(String.join(" ", command), exitCode, said.isEmpty() ? "" : ": " + said);
        }
    }

    Result run(Duration timeout, List<String> command);

    default Result run(String... command) {
        return run(DEFAULT_TIMEOUT, List.of(command));
    }

    /** Runs the command and fails (internal), carrying its stderr, unless it exits 0. */
    default Result runChecked(String... command) {
        return runChecked(DEFAULT_TIMEOUT, List.of(command));
    }

    default Result runChecked(Duration timeout, List<String> command) {
        Result result = run(timeout, command);
        if (!result.ok()) {
            throw StorageException.internal("%s", result.describe());
        }
        return result;
    }
}
