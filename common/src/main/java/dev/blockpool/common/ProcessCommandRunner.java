package dev.blockpool.common;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The real {@link CommandRunner}: a child process with its output captured. */
public final class ProcessCommandRunner implements CommandRunner {

    private static final Logger log = LoggerFactory.getLogger(ProcessCommandRunner.class);

    @Override
    public Result run(Duration timeout, List<String> command) {
        NoWaiting.refuse(command.getFirst());
        log.debug("running {}", command);
        Process process;
        try {
            ProcessBuilder builder = new ProcessBuilder(command)
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
            // Output and stderr are parsed and matched ("No space left on device"): always in C.
            builder.environment().put("LC_ALL", "C");
            builder.environment().remove("LANGUAGE");
            process = builder.start();
        } catch (IOException e) {
            throw StorageException.internal(e, "cannot run `%s`: %s", String.join(" ", command), e.getMessage());
        }
        // Drain both pipes concurrently so a chatty command cannot block on a full pipe.
        CompletableFuture<String> stdout = readAsync(process.getInputStream());
        CompletableFuture<String> stderr = readAsync(process.getErrorStream());
        try {
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                process.waitFor();
                throw StorageException.internal(
                        "`%s` did not finish within %s and was killed", String.join(" ", command), timeout);
            }
            return new Result(List.copyOf(command), process.exitValue(), stdout.get(), stderr.get());
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw StorageException.internal("interrupted while running `%s`", String.join(" ", command));
        } catch (ExecutionException e) {
            throw StorageException.internal(e.getCause(), "cannot read the output of `%s`", String.join(" ", command));
        }
    }

    private static CompletableFuture<String> readAsync(InputStream stream) {
        return CompletableFuture.supplyAsync(
                () -> {
                    try (stream) {
                        return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                },
                Thread::startVirtualThread);
    }
}
