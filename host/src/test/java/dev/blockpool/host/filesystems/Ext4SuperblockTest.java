package dev.blockpool.host.filesystems;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.HostRequirements;
import dev.blockpool.common.StorageException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The size of an ext4 filesystem, read from superblocks mkfs.ext4 wrote into files (no root needed). */
class Ext4SuperblockTest {

    private static final long MiB = 1L << 20;

    @TempDir
    Path dir;

    private Path formatted(long bytes, List<String> options) throws IOException, InterruptedException {
        HostRequirements.assumeCommand("mkfs.ext4");
        Path image = dir.resolve("ext4" + String.join("", options).replace(" ", "") + ".img");
        try (RandomAccessFile file = new RandomAccessFile(image.toFile(), "rw")) {
            file.setLength(bytes);
        }
        List<String> command = new java.util.ArrayList<>(List.of("mkfs.ext4", "-q", "-F"));
        command.addAll(options);
        command.add(image.toString());
        Process mkfs = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(mkfs.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertThat(mkfs.waitFor()).as(output).isZero();
        return image;
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"-b1024", "-b4096", "-b4096 -O64bit"})
    void theFilesystemsSizeIsItsBlocksTimesItsBlockSize(String option) throws Exception {
        Path image = formatted(64 * MiB, List.of(option.split(" ")));
        Ext4Superblock superblock = Ext4Superblock.read(image);
        assertThat(superblock.sizeBytes()).isEqualTo(64 * MiB);
        assertThat(superblock.blockSize()).isEqualTo(option.startsWith("-b1024") ? 1024 : 4096);
        assertThat(superblock.smallerThan(64 * MiB)).isFalse();
        assertThat(superblock.smallerThan(64 * MiB + superblock.blockSize() - 1))
                .as("less than a block more: nothing to grow")
                .isFalse();
        assertThat(superblock.smallerThan(64 * MiB + superblock.blockSize())).isTrue();

        try (RandomAccessFile file = new RandomAccessFile(image.toFile(), "rw")) {
            file.setLength(96 * MiB); // the image grew; the filesystem did not
        }
        assertThat(Ext4Superblock.read(image).sizeBytes()).isEqualTo(64 * MiB);
    }

    @Test
    void theHighWordOfTheBlockCountCountsOnlyWith64BitBlockNumbers() {
        ByteBuffer sb = ByteBuffer.allocate(Ext4Superblock.LENGTH).order(ByteOrder.LITTLE_ENDIAN);
        sb.putShort(0x38, (short) 0xEF53);
        sb.putInt(0x04, 16);
        sb.putInt(0x18, 2); // 4 KiB blocks
        sb.putInt(0x150, 1);
        assertThat(Ext4Superblock.parse(sb).blocks()).isEqualTo(16);
        sb.putInt(0x60, 0x80);
        assertThat(Ext4Superblock.parse(sb).sizeBytes()).isEqualTo(((1L << 32) + 16) * 4096);
    }

    @Test
    void anythingButAnExt4SuperblockIsRefused() throws IOException {
        Path zeros = Files.write(dir.resolve("zeros.img"), new byte[8192]);
        assertThatThrownBy(() -> Ext4Superblock.read(zeros))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.INTERNAL))
                .hasMessageContaining("no ext4 superblock");
        Path short_ = Files.write(dir.resolve("short.img"), new byte[1500]);
        assertThatThrownBy(() -> Ext4Superblock.read(short_)).hasMessageContaining("ends inside its ext4 superblock");
    }
}
