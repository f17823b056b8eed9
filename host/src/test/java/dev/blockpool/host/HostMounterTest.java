package dev.blockpool.host;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.StorageException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** umount(8) results are believed only when the mount table agrees; on a scripted runner. */
class HostMounterTest {

    private static final Path TARGET = Path.of("/var/lib/kubelet/pods/p/volumes/v");

    private final List<MountInfo> mounts = new ArrayList<>(List.of(new MountInfo(40, 1, new DeviceNumber(7, 3), "/",
            TARGET, List.of("rw"), List.of(), "ext4", "/dev/loop3", List.of("rw"))));
    private final MountTable table = () -> List.copyOf(mounts);

    private static void assertInternal(Runnable call, String messagePart) {
        assertThatThrownBy(call::run).isInstanceOfSatisfying(StorageException.class, e -> {
            assertThat(e.kind()).isEqualTo(StorageException.Kind.INTERNAL);
            assertThat(e.getMessage()).contains(messagePart);
        });
    }

    @Test
    void aBusyMountIsAnErrorAndNeverLazilyDetachedWhenHealthy() {
        ScriptedRunner runner = new ScriptedRunner(c -> ScriptedRunner.exit(c, 32, "umount: target is busy."));
        HostMounter mounter = new HostMounter(runner, table);
        assertInternal(() -> mounter.unmount(TARGET, false), "target is busy");
        assertThat(runner.commands).containsExactly("umount " + TARGET);
        assertThat(mounts).hasSize(1);
    }

    @Test
    void aCorruptedMountThatUmountCannotRemoveIsLazilyDetached() {
        ScriptedRunner runner = new ScriptedRunner(c -> {
            if (c.contains("--lazy")) {
                mounts.clear();
                return null;
            }
            return ScriptedRunner.exit(c, 32, "umount: can't read superblock");
        });
        new HostMounter(runner, table).unmount(TARGET, true);
        assertThat(runner.commands).containsExactly("umount " + TARGET, "umount --lazy " + TARGET);
        assertThat(mounts).isEmpty();
    }

    @Test
    void aSuccessfulUmountWhoseMountIsStillThereIsAnError() {
        ScriptedRunner runner = new ScriptedRunner(c -> null); // exit 0, table unchanged
        assertInternal(() -> new HostMounter(runner, table).unmount(TARGET, false), "still mounted");
        assertThat(runner.commands).containsExactly("umount " + TARGET);
    }

    @Test
    void nothingMountedIsNothingToDo() {
        mounts.clear();
        ScriptedRunner runner = new ScriptedRunner(c -> null);
        new HostMounter(runner, table).unmount(TARGET, true);
        assertThat(runner.commands).isEmpty();
    }
}
