package dev.blockpool.host.filesystems;

import static dev.blockpool.host.loops.LoopScratch.MiB;
import static dev.blockpool.host.loops.LoopScratch.image;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.NeedsRoot;
import dev.blockpool.host.loops.HostLoopDevices;
import dev.blockpool.host.loops.LoopAttachments;
import dev.blockpool.host.loops.LoopDevices;
import dev.blockpool.host.loops.LoopScratch;
import dev.blockpool.host.mounts.ProcMountTable;
import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * FIFREEZE and FITHAW on a real ext4 file system on a loop device (root only), in the test's own
 * temporary directory; every mount and device it made is undone, even on failure.
 */
@NeedsRoot
class LinuxFreezeCallsRealHostTest {

    private final BlockingCalls blocking = new BlockingCalls("test-syscall", 4);
    private final LoopDevices loops = new HostLoopDevices(blocking);

    @RegisterExtension
    final LoopScratch scratch = new LoopScratch("blockpool-freeze-it-");

    @Test
    void aFileSystemIsFrozenOrThawedAsTheKernelAnswers() throws IOException {
        Path image = image(scratch.dir(), "frozen.img", 32 * MiB);
        Path mountPoint = scratch.dir().resolve("frozen");
        scratch.mountExt4(loops, image, mountPoint);
        FreezeCalls kernel = new LinuxFreezeCalls();
        scratch.undo(() -> kernel.thaw(mountPoint)); // never left frozen, whatever fails: before its unmount

        assertThat(kernel.thaw(mountPoint))
                .as("FITHAW of a file system not frozen: EINVAL")
                .isFalse();
        kernel.freeze(mountPoint);
        assertThatThrownBy(() -> kernel.freeze(mountPoint))
                .as("frozen: a second FIFREEZE is refused")
                .hasMessageContaining("cannot freeze the file system mounted at " + mountPoint);
        assertThat(kernel.thaw(mountPoint)).isTrue();

        // What the freezes answer of the image is what the kernel answered of its file system.
        FilesystemFreezes freezes =
                FilesystemFreezes.onThisHost(new LoopAttachments(loops, new ProcMountTable()), blocking);
        assertThat(freezes.freeze(image)).containsExactly(mountPoint);
        assertThatThrownBy(() -> kernel.freeze(mountPoint))
                .as("frozen by the freezes")
                .hasMessageContaining("cannot freeze");
        assertThat(freezes.thaw(image)).isEqualTo(FilesystemFreezes.Thaw.THAWED);
        assertThat(kernel.thaw(mountPoint)).as("thawed by the freezes").isFalse();
        assertThat(freezes.thaw(image))
                .as("not frozen: EINVAL, answered as thawed")
                .isEqualTo(FilesystemFreezes.Thaw.THAWED);
    }
}
