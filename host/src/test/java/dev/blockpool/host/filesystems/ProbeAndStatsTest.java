package dev.blockpool.host.filesystems;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.FsType;
import dev.blockpool.common.GrowthMarker;
import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import dev.blockpool.host.loops.FileId;
import dev.blockpool.host.loops.LoopDevice;
import dev.blockpool.host.mounts.DeviceNumber;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ProbeAndStatsTest {

    private static final BlockingCalls CALLS = new BlockingCalls("test", 1);

    @Test
    void parsesBlkidExportOutput() {
        Probe ext4 = Probe.parseExport("""
                DEVNAME=/dev/loop0
                UUID=6f1f7a0e-5a4c-4a43-9f8b-1c4a0c3c2f11
                VERSION=1.0
                BLOCK_SIZE=4096
                TYPE=ext4
                USAGE=filesystem
                """);
        assertThat(ext4.empty()).isFalse();
        assertThat(ext4.type()).contains("ext4");
        assertThat(ext4.usage()).contains("filesystem");

        Probe table = Probe.parseExport("DEVNAME=/dev/loop1\nPTUUID=1a2b3c4d\nPTTYPE=dos\n");
        assertThat(table.empty()).isFalse();
        assertThat(table.partitionTable()).contains("dos");
        assertThat(table.describe()).isEqualTo("a dos partition table");

        Probe swap = Probe.parseExport("DEVNAME=/dev/loop2\nTYPE=swap\nUSAGE=other\n");
        assertThat(swap.empty()).isFalse();
        assertThat(swap.describe()).isEqualTo("a swap signature (other)");
    }

    private static CommandRunner answering(int exitCode, String stdout, String stderr) {
        return (timeout, command) -> new CommandRunner.Result(command, exitCode, stdout, stderr);
    }

    @TempDir
    Path dir;

    /** A target unpublished and removed between the look at its mount and its statfs is not there: NOT_FOUND. */
    @Test
    void theUsageOfAPathGoneMeanwhileIsNotFoundNotAnInternalError() {
        assertThatThrownBy(() -> new HostFilesystems(answering(0, "", ""), CALLS).stats(dir.resolve("gone")))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.NOT_FOUND));
    }

    @Test
    void blkidExitCodesDistinguishEmptyFromFailure() throws IOException {
        Path device = Files.write(dir.resolve("zeros.img"), new byte[128 * 1024]); // stands in for a device
        assertThat(new HostFilesystems(answering(2, "", ""), CALLS)
                        .probe(device)
                        .empty())
                .isTrue();
        assertThat(new HostFilesystems(answering(0, "TYPE=xfs\n", ""), CALLS)
                        .probe(device)
                        .type())
                .contains("xfs");
        // 8: ambivalent (several signatures); 4: usage/IO error. Neither may ever read as "empty".
        for (int code : List.of(8, 4, 1)) {
            assertThatThrownBy(() -> new HostFilesystems(answering(code, "", "blkid: error"), CALLS).probe(device))
                    .isInstanceOfSatisfying(
                            StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.INTERNAL))
                    .hasMessageContaining("will not be formatted");
        }
    }

    @Test
    void everyProgramRunIsOneTheNodesReadinessAsksFor() throws IOException {
        Path device = Files.write(dir.resolve("zeros.img"), new byte[128 * 1024]); // stands in for a device
        ScriptedRunner runner = new ScriptedRunner(command -> null);
        HostFilesystems filesystems = new HostFilesystems(runner, CALLS);
        filesystems.probe(device);
        for (FsType type : FsType.values()) {
            filesystems.format(device, type);
            filesystems.check(device, type);
            filesystems.growMounted(device, dir, type);
        }
        // The unmounted growth: a device of 2 MiB holding an ext4 of 1 MiB.
        Path smaller = Files.write(dir.resolve("smaller.img"), ext4Head(1024, 0));
        assertThat(filesystems.growUnmounted(device(smaller, 2 << 20), FsType.EXT4, marker()))
                .isTrue();
        assertThat(filesystems.growUnmounted(device(smaller, 1 << 20), FsType.EXT4, marker()))
                .isFalse();
        Files.createFile(marker());
        filesystems.repairInterruptedGrowth(smaller, marker());
        assertThat(runner.commands)
                .isNotEmpty()
                .allSatisfy(command -> assertThat(Stream.concat(
                                HostFilesystems.TOOLS.stream(),
                                HostFilesystems.FILESYSTEM_TOOLS.values().stream()
                                        .flatMap(List::stream)))
                        .contains(command.split(" ")[0]));
    }

    @Test
    void aGrowthCutShortIsRepairedWithoutQuestionsAndItsMarkGoesOnlyOnceRepaired() throws IOException {
        Path device = dir.resolve("loop9");
        ScriptedRunner runner = new ScriptedRunner(command -> null);
        HostFilesystems filesystems = new HostFilesystems(runner, CALLS);
        filesystems.repairInterruptedGrowth(device, marker());
        assertThat(runner.commands).as("no mark: no growth was cut short").isEmpty();

        Files.createFile(marker());
        filesystems.repairInterruptedGrowth(device, marker());
        assertThat(runner.commands).containsExactly("e2fsck -f -y " + device);
        assertThat(marker()).doesNotExist();

        ScriptedRunner beyondRepair = new ScriptedRunner(c -> ScriptedRunner.exit(c, 4, "UNEXPECTED"));
        Files.createFile(marker());
        assertThatThrownBy(() -> new HostFilesystems(beyondRepair, CALLS).repairInterruptedGrowth(device, marker()))
                .hasMessageContaining("whose growth was cut short, needs manual repair");
        assertThat(marker()).as("still marked: the next stage tries again").exists();
    }

    @Test
    void aFailedGrowthLeavesItsMark() throws IOException {
        Path head = Files.write(dir.resolve("head.img"), ext4Head(1024, 2));
        ScriptedRunner failing =
                new ScriptedRunner(c -> c.getFirst().equals("resize2fs") ? ScriptedRunner.exit(c, 1, "killed") : null);
        assertThatThrownBy(() ->
                        new HostFilesystems(failing, CALLS).growUnmounted(device(head, 8 << 20), FsType.EXT4, marker()))
                .hasMessageContaining("cannot grow");
        assertThat(marker()).exists();
    }

    private Path marker() {
        return dir.resolve("volume.img" + GrowthMarker.SUFFIX);
    }

    /** The head of a device holding an ext4 filesystem of {@code blocks} blocks of 1 KiB << {@code log}. */
    private static byte[] ext4Head(int blocks, int log) {
        java.nio.ByteBuffer head = java.nio.ByteBuffer.allocate(4096).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        head.putShort(1024 + 0x38, (short) 0xEF53);
        head.putInt(1024 + 0x04, blocks);
        head.putInt(1024 + 0x18, log);
        return head.array();
    }

    private static LoopDevice device(Path path, long bytes) {
        return new LoopDevice(
                "loop9",
                path,
                new DeviceNumber(7, 9),
                path,
                new FileId(new DeviceNumber(0, 0), 1),
                java.util.Set.of(),
                bytes);
    }

    @Test
    void anExt4GrowsUnmountedOnlyWhenItsDeviceHoldsAnotherBlockAndAfterAFullCheck() throws IOException {
        Path head = Files.write(dir.resolve("head.img"), ext4Head(1024, 2)); // 4 MiB in 4 KiB blocks
        ScriptedRunner runner = new ScriptedRunner(command -> null);
        HostFilesystems filesystems = new HostFilesystems(runner, CALLS);
        assertThat(filesystems.growUnmounted(device(head, (4 << 20) + 4095), FsType.EXT4, marker()))
                .isFalse();
        assertThat(filesystems.growUnmounted(device(head, 8 << 20), FsType.XFS, marker()))
                .isFalse();
        assertThat(runner.commands).isEmpty();

        assertThat(filesystems.growUnmounted(device(head, 8 << 20), FsType.EXT4, marker()))
                .isTrue();
        assertThat(runner.commands).containsExactly("e2fsck -f -p " + head, "resize2fs " + head);
        assertThat(marker()).as("removed once grown").doesNotExist();

        ScriptedRunner broken =
                new ScriptedRunner(c -> c.getFirst().equals("e2fsck") ? ScriptedRunner.exit(c, 4, "UNEXPECTED") : null);
        assertThatThrownBy(() ->
                        new HostFilesystems(broken, CALLS).growUnmounted(device(head, 8 << 20), FsType.EXT4, marker()))
                .hasMessageContaining("needs manual repair before it can grow");
        assertThat(broken.commands).containsExactly("e2fsck -f -p " + head);
    }

    @Test
    void aRefusedOnlineGrowthOfExt4IsAnAnswerAndOfXfsAnError() {
        Path device = Path.of("/dev/loop0");
        ScriptedRunner refusing =
                new ScriptedRunner(c -> ScriptedRunner.exit(c, 1, "resize2fs: Permission denied to resize filesystem"));
        assertThat(new HostFilesystems(refusing, CALLS).growMounted(device, dir, FsType.EXT4))
                .isFalse();
        assertThatThrownBy(() -> new HostFilesystems(refusing, CALLS).growMounted(device, dir, FsType.XFS))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.INTERNAL))
                .hasMessageContaining("CAP_SYS_ADMIN");
        ScriptedRunner failing = new ScriptedRunner(c -> ScriptedRunner.exit(c, 1, "bad superblock"));
        assertThatThrownBy(() -> new HostFilesystems(failing, CALLS).growMounted(device, dir, FsType.EXT4))
                .hasMessageContaining("bad superblock");
        assertThat(new HostFilesystems(new ScriptedRunner(c -> null), CALLS).growMounted(device, dir, FsType.EXT4))
                .isTrue();
    }

    @Test
    void aDeviceBlkidCouldNotOpenIsNeverEmpty() {
        // blkid -p exits 2 ("nothing found") for a missing device node too.
        Path gone = dir.resolve("loop-gone");
        assertThatThrownBy(() -> new HostFilesystems(answering(2, "", ""), CALLS).probe(gone))
                .isInstanceOfSatisfying(
                        StorageException.class, e -> assertThat(e.kind()).isEqualTo(StorageException.Kind.INTERNAL))
                .hasMessageContaining("cannot read " + gone)
                .hasMessageContaining("will not be formatted");
    }

    @Test
    void fsckExitCodesAreInterpretedPerFilesystem() {
        Path device = Path.of("/dev/loop0");
        new HostFilesystems(answering(1, "", "errors corrected"), CALLS).check(device, FsType.EXT4);
        new HostFilesystems(answering(2, "", ""), CALLS).check(device, FsType.EXT4);
        assertThatThrownBy(() -> new HostFilesystems(answering(4, "", "UNEXPECTED INCONSISTENCY"), CALLS)
                        .check(device, FsType.EXT4))
                .hasMessageContaining("manual repair")
                .hasMessageContaining("UNEXPECTED INCONSISTENCY");
    }

    @Test
    void xfsIsNotCheckedBeforeAMountBecauseTheMountReplaysItsLog() {
        // xfs_repair -n calls a dirty log (any unclean shutdown) corruption: stage would fail forever.
        ScriptedRunner runner = new ScriptedRunner(c -> ScriptedRunner.exit(c, 1, "dirty log"));
        new HostFilesystems(runner, CALLS).check(Path.of("/dev/loop0"), FsType.XFS);
        assertThat(runner.commands).isEmpty();
    }

    @Test
    void statfsNumbersAreComputedLikeDf() {
        // statfs(2) of a 1 GiB ext4: fragment size, blocks, free, available, inodes, free inodes
        FsStats stats = FsStats.of(new Libc.StatFs(4096, 249830, 244990, 231418, 65536, 65525, 0));
        assertThat(stats.totalBytes()).isEqualTo(249830L * 4096);
        assertThat(stats.usedBytes()).isEqualTo((249830L - 244990) * 4096);
        assertThat(stats.availableBytes()).isEqualTo(231418L * 4096);
        assertThat(stats.totalInodes()).isEqualTo(65536);
        assertThat(stats.usedInodes()).isEqualTo(11);
        assertThat(stats.freeInodes()).isEqualTo(65525);
    }
}
