package dev.blockpool.identity;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.FsType;
import dev.blockpool.common.HostTools;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HostReadinessTest {

    @TempDir
    Path dir;

    @Test
    void readyWithWritablePoolAndAllTools() throws Exception {
        Path bin = tool("mkfs.ext4");
        assertThat(new HostReadiness(dir, List.of("mkfs.ext4"), List.of(bin)).problems())
                .isEmpty();
    }

    @Test
    void missingToolIsNamed() throws Exception {
        Path bin = tool("mkfs.ext4");
        assertThat(new HostReadiness(dir, List.of("mkfs.ext4", "mkfs.xfs"), List.of(bin)).problems())
                .containsExactly("host tool `mkfs.xfs` is not installed (Debian: xfsprogs, RHEL: xfsprogs)");
    }

    @Test
    void missingPoolDirectoryIsNamed() {
        Path pool = dir.resolve("absent");
        assertThat(new HostReadiness(pool, List.of(), List.of()).problems())
                .containsExactly("pool directory " + pool + " does not exist");
    }

    @Test
    void nonExecutableFileIsNotATool() throws Exception {
        Path bin = Files.createDirectories(dir.resolve("bin"));
        Files.createFile(bin.resolve("losetup"));
        assertThat(new HostReadiness(dir, List.of("losetup"), List.of(bin)).problems())
                .hasSize(1);
    }

    @Test
    void aNodeWithoutTheXfsToolsIsReadyForExt4AndSaysWhatXfsLacks() throws Exception {
        Path bin = tools("blkid", "mkfs.ext4", "e2fsck", "resize2fs");
        HostReadiness readiness = new HostReadiness(dir, List.of("blkid"), FILESYSTEMS, new HostTools(List.of(bin)));

        assertThat(readiness.problems()).isEmpty();
        assertThat(readiness.limits())
                .containsExactly("xfs volumes cannot be served on this node: "
                        + "`mkfs.xfs` is not installed (Debian: xfsprogs, RHEL: xfsprogs), "
                        + "`xfs_growfs` is not installed (Debian: xfsprogs, RHEL: xfsprogs)");
    }

    @Test
    void aNodeWithoutTheExt4ToolsServesXfs() throws Exception {
        Path bin = tools("blkid", "mkfs.xfs", "xfs_growfs");
        HostReadiness readiness = new HostReadiness(dir, List.of("blkid"), FILESYSTEMS, new HostTools(List.of(bin)));

        assertThat(readiness.problems()).isEmpty();
        assertThat(readiness.limits()).singleElement().asString().startsWith("ext4 volumes cannot be served");
    }

    @Test
    void aNodeThatCanServeNoFilesystemIsNotReadyAndSaysWhy() throws Exception {
        Path bin = tools("blkid", "e2fsck");
        HostReadiness readiness = new HostReadiness(dir, List.of("blkid"), FILESYSTEMS, new HostTools(List.of(bin)));

        assertThat(readiness.problems())
                .containsExactly("no filesystem can be served: ext4 needs "
                        + "`mkfs.ext4` is not installed (Debian: e2fsprogs, RHEL: e2fsprogs), "
                        + "`resize2fs` is not installed (Debian: e2fsprogs, RHEL: e2fsprogs); xfs needs "
                        + "`mkfs.xfs` is not installed (Debian: xfsprogs, RHEL: xfsprogs), "
                        + "`xfs_growfs` is not installed (Debian: xfsprogs, RHEL: xfsprogs)");
    }

    @Test
    void aToolEveryRequestNeedsMakesTheNodeNotReady() throws Exception {
        Path bin = tools("mkfs.ext4", "e2fsck", "resize2fs");
        assertThat(new HostReadiness(dir, List.of("blkid"), FILESYSTEMS, new HostTools(List.of(bin))).problems())
                .containsExactly("host tool `blkid` is not installed (Debian: util-linux, RHEL: util-linux)");
    }

    private static final Map<FsType, List<String>> FILESYSTEMS = orderedFilesystems();

    private static Map<FsType, List<String>> orderedFilesystems() {
        Map<FsType, List<String>> tools = new LinkedHashMap<>();
        tools.put(FsType.EXT4, List.of("mkfs.ext4", "e2fsck", "resize2fs"));
        tools.put(FsType.XFS, List.of("mkfs.xfs", "xfs_growfs"));
        return tools;
    }

    private Path tools(String... names) throws Exception {
        Path bin = dir.resolve("bin");
        for (String name : names) {
            tool(name);
        }
        return bin;
    }

    private Path tool(String name) throws Exception {
        Path bin = Files.createDirectories(dir.resolve("bin"));
        Path tool = bin.resolve(name);
        Files.createFile(tool, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")));
        return bin;
    }
}
