package dev.blockpool.host.filesystems;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.FsType;
import dev.blockpool.common.StorageException;
import dev.blockpool.host.FakeHost;
import dev.blockpool.host.loops.LoopAttachments;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the freezes answer is what the kernel (here a fake of it) answered: a freeze past its
 * deadline is neither assumed done nor assumed undone. No timing: a call that must pass its
 * deadline waits on a latch, and the deadline of the others is a day.
 */
class FilesystemFreezesTest {

    private static final Duration A_DAY = Duration.ofDays(1);

    @TempDir
    Path dir;

    private final FakeFreezeCalls kernel = new FakeFreezeCalls();
    private final BlockingCalls blocking = new BlockingCalls("freeze-test", 4);
    private FakeHost host;
    private Path image;
    private Path staging;

    @BeforeEach
    void stage() throws IOException {
        host = new FakeHost(dir.resolve("dev"));
        image = Files.createFile(dir.resolve("vol-a.img"));
        staging = dir.resolve("staging");
        host.mount(host.attach(image, false).device(), staging, FsType.EXT4, List.of());
    }

    private FilesystemFreezes freezes(Duration freezeDeadline) {
        return new FilesystemFreezes(new LoopAttachments(host, host), kernel, blocking, freezeDeadline, A_DAY);
    }

    @Test
    void aThawSaysWhatTheKernelAnswered() {
        FilesystemFreezes freezes = freezes(A_DAY);
        assertThat(freezes.freeze(image)).containsExactly(staging);

        assertThat(freezes.thaw(image)).isEqualTo(FilesystemFreezes.Thaw.THAWED);
        assertThat(kernel.frozen).isEmpty();
        assertThat(freezes(A_DAY).thaw(dir.resolve("not-staged.img")))
                .as("nothing mounted: nothing can be said of it")
                .isEqualTo(FilesystemFreezes.Thaw.NOTHING_MOUNTED);
    }

    @Test
    void aRefusedThawIsThrownNotTakenForThawed() {
        FilesystemFreezes freezes = freezes(A_DAY);
        freezes.freeze(image);
        kernel.thawFailure = StorageException.internal("cannot thaw the file system mounted at %s: EIO", staging);

        assertThatThrownBy(() -> freezes.thaw(image)).hasMessageContaining("EIO");
        assertThat(kernel.frozen).containsExactly(staging);
    }

    @Test
    void aFreezePastItsDeadlineIsUnansweredUntilItReturnsAndThenUndone() throws Exception {
        FilesystemFreezes freezes = freezes(Duration.ZERO);
        CountDownLatch writer = new CountDownLatch(1);
        kernel.writers.put(staging, writer);

        assertThatThrownBy(() -> freezes.freeze(image))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.UNAVAILABLE))
                .hasMessageContaining("a writer holds it");
        assertThat(freezes.thaw(image))
                .as("a FIFREEZE still in the kernel: not frozen yet, but not thawed")
                .isEqualTo(FilesystemFreezes.Thaw.UNANSWERED);
        kernel.waitingForWriter.await(); // the FIFREEZE has reached the kernel, whenever its caller gave up
        assertThat(kernel.log).as("no FITHAW beside the FIFREEZE").containsExactly("FIFREEZE staging");

        writer.countDown(); // the writer lets go: the freeze completes, and nobody holds it
        kernel.thawed.await();

        assertThat(kernel.frozen).as("undone as it returned").isEmpty();
        assertThat(freezes.thaw(image)).isEqualTo(FilesystemFreezes.Thaw.THAWED);
        assertThat(kernel.log).containsExactly("FIFREEZE staging", "FITHAW staging", "FITHAW staging");
    }
}
