package dev.blockpool.host.loops;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.host.mounts.DeviceNumber;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DeviceHoldersTest {

    @TempDir
    Path proc;

    private void process(String pid, String comm, String namespace, String mountinfo, Path openFile)
            throws IOException {
        Path dir = Files.createDirectories(proc.resolve(pid));
        Files.writeString(dir.resolve("comm"), comm + "\n");
        Files.createDirectories(dir.resolve("ns"));
        Files.createSymbolicLink(dir.resolve("ns/mnt"), Path.of(namespace));
        Files.writeString(dir.resolve("mountinfo"), mountinfo);
        Files.createDirectories(dir.resolve("fd"));
        if (openFile != null) {
            Files.createSymbolicLink(dir.resolve("fd/3"), openFile);
        }
    }

    @Test
    void namesProcessesWithTheDeviceOpenAndNamespacesStillMountingIt() throws IOException {
        String plain = "27 1 254:0 / / rw - ext4 /dev/vda rw\n";
        String withCopy = plain + "88 27 7:7 / /tmp/staging rw - ext4 /dev/loop7 rw\n";
        process("10", "java", "mnt:[1]", plain, null);
        process("11", "dd", "mnt:[1]", plain, Path.of("/dev/loop7"));
        process("12", "buildah-chroot", "mnt:[2]", withCopy, null);
        process("13", "sh", "mnt:[2]", withCopy, null); // same namespace: reported once

        assertThat(new DeviceHolders(proc).of(Path.of("/dev/loop7"), new DeviceNumber(7, 7)))
                .containsExactly(
                        "pid 11 (dd) has /dev/loop7 open",
                        "pid 12 (buildah-chroot) still mounts it at /tmp/staging in mount namespace mnt:[2]");
        assertThat(new DeviceHolders(proc).of(Path.of("/dev/loop8"), new DeviceNumber(7, 8)))
                .isEmpty();
    }
}
