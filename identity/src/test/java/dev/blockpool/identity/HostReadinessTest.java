package dev.blockpool.identity;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
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
                .containsExactly("host tool `mkfs.xfs` is not installed");
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

    private Path tool(String name) throws Exception {
        Path bin = Files.createDirectories(dir.resolve("bin"));
        Path tool = bin.resolve(name);
        Files.createFile(tool, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")));
        return bin;
    }
}
