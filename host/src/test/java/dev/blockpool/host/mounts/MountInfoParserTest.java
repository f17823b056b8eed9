package dev.blockpool.host.mounts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class MountInfoParserTest {

    // Captured from a node: a staged ext4 on a loop device, a bind of it into a pod (with a
    // space in the path), a raw block publish (device node bound from devtmpfs), shared and
    // master optional fields, and a mount with no optional fields at all.
    private static final String SAMPLE = """
            27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
            24 27 0:6 / /dev rw,relatime shared:2 - devtmpfs devtmpfs rw,size=12334492k,mode=755
            101 27 7:3 / /var/lib/kubelet/plugins/kubernetes.io/csi/blockpool.csi.dev/abc/globalmount rw,noatime shared:50 - ext4 /dev/loop3 rw
            102 27 7:3 / /var/lib/kubelet/pods/uid/volumes/my\\040vol/mount ro,relatime shared:50 master:7 - ext4 /dev/loop3 rw
            103 27 0:6 /loop4 /var/lib/kubelet/pods/uid/volumeDevices/dev rw,relatime - devtmpfs devtmpfs rw,mode=755
            104 27 0:44 /a\\134b /tmp/tab\\011and\\012newline rw - tmpfs tmp\\040fs rw
            """;

    @Test
    void parsesFieldsOptionalFieldsAndEscapes() {
        List<MountInfo> mounts = MountInfoParser.parse(SAMPLE);
        assertThat(mounts).hasSize(6);

        MountInfo staged = mounts.get(2);
        assertThat(staged.mountId()).isEqualTo(101);
        assertThat(staged.parentId()).isEqualTo(27);
        assertThat(staged.device()).isEqualTo(new DeviceNumber(7, 3));
        assertThat(staged.root()).isEqualTo("/");
        assertThat(staged.fsType()).isEqualTo("ext4");
        assertThat(staged.source()).isEqualTo("/dev/loop3");
        assertThat(staged.mountOptions()).containsExactly("rw", "noatime");
        assertThat(staged.optionalFields()).containsExactly("shared:50");
        assertThat(staged.readOnly()).isFalse();

        MountInfo bind = mounts.get(3);
        assertThat(bind.mountPoint()).isEqualTo(Path.of("/var/lib/kubelet/pods/uid/volumes/my vol/mount"));
        assertThat(bind.optionalFields()).containsExactly("shared:50", "master:7");
        assertThat(bind.readOnly()).isTrue();
        assertThat(bind.superOptions()).containsExactly("rw");

        MountInfo block = mounts.get(4);
        assertThat(block.root()).isEqualTo("/loop4");
        assertThat(block.optionalFields()).isEmpty();
        assertThat(block.fsType()).isEqualTo("devtmpfs");

        MountInfo odd = mounts.get(5);
        assertThat(odd.root()).isEqualTo("/a\\b");
        assertThat(odd.mountPoint()).isEqualTo(Path.of("/tmp/tab\tand\nnewline"));
        assertThat(odd.source()).isEqualTo("tmp fs");
    }

    @Test
    void theTopmostOfStackedMountsWins() {
        String stacked = """
                30 27 7:1 / /mnt/x rw - ext4 /dev/loop1 rw
                31 30 7:2 / /mnt/x rw - ext4 /dev/loop2 rw
                """;
        MountTable table = () -> MountInfoParser.parse(stacked);
        assertThat(table.at(Path.of("/mnt/x/")))
                .get()
                .extracting(MountInfo::mountId)
                .isEqualTo(31);
        assertThat(table.at(Path.of("/mnt/y"))).isEmpty();
        assertThat(table.ofDevice(new DeviceNumber(7, 1))).hasSize(1);
    }

    @Test
    void theProcTableParsesOnlyTheLinesAskedForAndAnswersLikeTheWholeTable(@org.junit.jupiter.api.io.TempDir Path dir)
            throws java.io.IOException {
        Path file = java.nio.file.Files.writeString(
                dir.resolve("mountinfo"),
                SAMPLE
                        + "105 27 7:3 / /var/lib/kubelet/pods/uid/volumes/my\\040vol/mount rw - ext4 /dev/loop3 rw\n"
                        + "106 27 7:9 / /mnt/broken rw this line is malformed but never asked about\n");
        MountTable proc = new ProcMountTable(file);
        MountTable whole = () -> MountInfoParser.parse(SAMPLE);
        Path spaced = Path.of("/var/lib/kubelet/pods/uid/volumes/my vol/mount");
        assertThat(proc.allAt(spaced)).extracting(MountInfo::mountId).containsExactly(102, 105);
        assertThat(proc.at(spaced)).get().extracting(MountInfo::mountId).isEqualTo(105);
        assertThat(proc.at(Path.of("/tmp/tab\tand\nnewline"))).isEqualTo(whole.at(Path.of("/tmp/tab\tand\nnewline")));
        assertThat(proc.at(Path.of("/var/lib/kubelet/pods/uid/volumes/my"))).isEmpty();
        assertThat(proc.at(Path.of("/"))).get().extracting(MountInfo::mountId).isEqualTo(27);
        assertThat(proc.ofDevice(new DeviceNumber(7, 3)))
                .extracting(MountInfo::mountId)
                .containsExactly(101, 102, 105);
        assertThat(proc.ofDevice(new DeviceNumber(7, 30))).isEmpty();
        assertThatThrownBy(proc::mounts)
                .isInstanceOfSatisfying(
                        dev.blockpool.common.StorageException.class,
                        e -> assertThat(e.getMessage()).contains("cannot parse the mount table"));
    }

    @Test
    void rejectsMalformedLines() {
        assertThatThrownBy(() -> MountInfoParser.parse("27 1 254:0 / / rw ext4 /dev/vda rw"))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> MountInfoParser.parse("x 1 254:0 / / rw - ext4 /dev/vda rw"))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void decodesLinuxDevT() {
        // makedev(7, 3) and a large minor, as stat(2) encodes them.
        assertThat(DeviceNumber.fromDevT(0x703L)).isEqualTo(new DeviceNumber(7, 3));
        assertThat(DeviceNumber.fromDevT((259L << 8) | ((300L & 0xff)) | ((300L & ~0xffL) << 12)))
                .isEqualTo(new DeviceNumber(259, 300));
    }
}
