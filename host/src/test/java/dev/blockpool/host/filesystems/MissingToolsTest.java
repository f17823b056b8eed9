package dev.blockpool.host.filesystems;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.FsType;
import dev.blockpool.common.HostTools;
import dev.blockpool.common.StorageException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node without the xfs tools: its search path is a directory of links to only the ext4 tools
 * and blkid. What needs a missing program is refused before anything runs, naming the program
 * and its package; the ext4 tools run.
 */
class MissingToolsTest {

    private static final BlockingCalls CALLS = new BlockingCalls("test", 1);
    private static final List<String> KEPT = List.of("blkid", "mkfs.ext4", "e2fsck", "resize2fs");

    @TempDir
    Path dir;

    @Test
    void aRequestForAMissingToolNamesTheProgramAndItsPackage() throws Exception {
        HostTools withoutXfs = withoutXfs();
        ScriptedRunner runner = new ScriptedRunner(c -> ScriptedRunner.exit(c, 0, ""));
        HostFilesystems filesystems = new HostFilesystems(runner, CALLS, withoutXfs);
        Path device = Path.of("/dev/loop0");

        assertThatThrownBy(() -> filesystems.format(device, FsType.XFS))
                .isInstanceOfSatisfying(StorageException.class, e -> {
                    assertThat(e.kind()).isEqualTo(StorageException.Kind.PRECONDITION);
                    assertThat(e.getMessage())
                            .isEqualTo("`mkfs.xfs` is not installed (Debian: xfsprogs, RHEL: xfsprogs) on this node");
                });
        assertThatThrownBy(() -> filesystems.growMounted(device, dir, FsType.XFS))
                .isInstanceOfSatisfying(StorageException.class, e -> {
                    assertThat(e.kind()).isEqualTo(StorageException.Kind.PRECONDITION);
                    assertThat(e.getMessage()).contains("`xfs_growfs`", "xfsprogs");
                });
        assertThat(runner.commands).as("nothing ran for xfs").isEmpty();

        filesystems.format(device, FsType.EXT4);
        filesystems.check(device, FsType.EXT4);
        filesystems.growMounted(device, dir, FsType.EXT4);
        assertThat(runner.commands)
                .extracting(command -> command.split(" ")[0])
                .containsExactly("mkfs.ext4", "e2fsck", "resize2fs");
    }

    @Test
    void theMissingToolsOfEveryKindAreNamedWithTheirPackages() {
        HostTools none = new HostTools(List.of(dir));
        assertThat(List.of("mkfs.ext4", "resize2fs", "e2fsck", "blkid", "losetup"))
                .map(program -> catching(() -> none.require(program)))
                .containsExactly(
                        "`mkfs.ext4` is not installed (Debian: e2fsprogs, RHEL: e2fsprogs) on this node",
                        "`resize2fs` is not installed (Debian: e2fsprogs, RHEL: e2fsprogs) on this node",
                        "`e2fsck` is not installed (Debian: e2fsprogs, RHEL: e2fsprogs) on this node",
                        "`blkid` is not installed (Debian: util-linux, RHEL: util-linux) on this node",
                        "`losetup` is not installed (Debian: util-linux, RHEL: util-linux) on this node");
    }

    /** A search path of links to this host's ext4 tools and blkid, and nothing else. */
    private HostTools withoutXfs() throws Exception {
        HostTools host = HostTools.onThisHost();
        Path bin = Files.createDirectories(dir.resolve("bin"));
        for (String program : KEPT) {
            Optional<Path> real = List.of("/usr/sbin", "/sbin", "/usr/bin", "/bin").stream()
                    .map(d -> Path.of(d, program))
                    .filter(Files::isExecutable)
                    .findFirst();
            assumeTrue(real.isPresent() && host.installed(program), program + " is not installed here");
            Files.createSymbolicLink(bin.resolve(program), real.get());
        }
        HostTools tools = new HostTools(List.of(bin));
        assertThat(tools.installed("mkfs.ext4")).isTrue();
        assertThat(tools.installed("mkfs.xfs")).isFalse();
        return tools;
    }

    private static String catching(Runnable call) {
        try {
            call.run();
            return "no failure";
        } catch (StorageException e) {
            return e.getMessage();
        }
    }
}
