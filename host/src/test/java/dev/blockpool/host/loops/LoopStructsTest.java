package dev.blockpool.host.loops;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The loop driver's structs are laid out as linux/loop.h has them. */
class LoopStructsTest {

    @Test
    void loopInfo64AndLoopConfigHaveTheKernelsSizesAndOffsets() {
        assertThat(LinuxLoopCalls.LOOP_INFO64.byteSize()).isEqualTo(232);
        assertThat(LinuxLoopCalls.LOOP_INFO64.byteOffset(groupElement("lo_inode")))
                .isEqualTo(8);
        assertThat(LinuxLoopCalls.LOOP_INFO64.byteOffset(groupElement("lo_flags")))
                .isEqualTo(52);
        assertThat(LinuxLoopCalls.LOOP_INFO64.byteOffset(groupElement("lo_file_name")))
                .isEqualTo(56);
        assertThat(LinuxLoopCalls.LOOP_INFO64.byteOffset(groupElement("lo_init")))
                .isEqualTo(216);
        assertThat(LinuxLoopCalls.LOOP_CONFIG.byteSize()).isEqualTo(304);
        assertThat(LinuxLoopCalls.LOOP_CONFIG.byteOffset(groupElement("info"), groupElement("lo_flags")))
                .isEqualTo(60);
    }
}
