package dev.blockpool.pool.records;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DurableFilesTest {

    @TempDir
    Path dir;

    @Test
    void writeReplacesTheWholeFileAndLeavesNoTemporaryFile() throws IOException {
        Path target = dir.resolve("vol.json");
        DurableFiles.write(target, "a much longer first version".getBytes(StandardCharsets.UTF_8));
        DurableFiles.write(target, "v2".getBytes(StandardCharsets.UTF_8));

        assertThat(target).hasContent("v2");
        try (Stream<Path> files = Files.list(dir)) {
            assertThat(files).containsExactly(target);
        }
    }

    @Test
    void aFailedRenameRemovesItsTemporaryFileAndLeavesTheTargetAlone() throws IOException {
        Path target = dir.resolve("sub");
        Files.createDirectories(target.resolve("not-empty"));

        // renaming a file over a non-empty directory fails after the temporary file was written
        assertThatThrownBy(() -> DurableFiles.write(target, new byte[] {1}))
                .isInstanceOfSatisfying(
                        StorageException.class,
                        e -> assertThat(e.getMessage())
                                .startsWith("cannot write " + target + ": ")
                                .doesNotContain("Exception"));

        assertThat(target.resolve("not-empty")).isDirectory();
        try (Stream<Path> files = Files.list(dir)) {
            assertThat(files).containsExactly(target);
        }
    }

    @Test
    void aWriterInterruptedWhileItWaitsForItsTemporaryFileRemovesIt() throws IOException {
        Path target = dir.resolve("vol.json");
        // The writer's temporary file just made, and a look at it (a reconcile's) holding its
        // lock: the writer waits for that lock, and is interrupted while it does.
        Path temp = Files.write(DurableFiles.tempPath(target), new byte[0]);
        int look = Libc.open(temp.toString(), Libc.O_RDWR, 0);
        try {
            Flock.tryLockExclusive(look);
            Thread.currentThread().interrupt();
            assertThatThrownBy(() -> DurableFiles.write(target, new byte[] {1}))
                    .isInstanceOfSatisfying(
                            StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.BUSY));
        } finally {
            Thread.interrupted();
            Libc.close(look);
        }

        try (Stream<Path> files = Files.list(dir)) {
            assertThat(files).as("neither the record nor its temporary file").isEmpty();
        }
    }

    @Test
    void deleteIsIdempotent() throws IOException {
        Path target = dir.resolve("x.img");
        Files.write(target, new byte[] {1});
        assertThat(DurableFiles.delete(target)).isTrue();
        assertThat(DurableFiles.delete(target)).isFalse();
        assertThat(target).doesNotExist();
    }

    @Test
    void anInterruptedFlushIsAnInterruptionNotAnInputOutputError() throws IOException {
        Path file = Files.writeString(dir.resolve("vol.img"), "data");

        // a stopping driver interrupts its background work: the channel closes, the disk said nothing
        Thread.currentThread().interrupt();
        try {
            assertThatThrownBy(() -> DurableFiles.fsync(file)).isInstanceOfSatisfying(StorageException.class, e -> {
                assertThat(e.kind()).isEqualTo(StorageException.Kind.BUSY);
                assertThat(e.getMessage())
                        .isEqualTo("cannot flush " + file + " to disk: interrupted")
                        .doesNotContain("input/output error");
            });
        } finally {
            Thread.interrupted();
        }
    }
}
