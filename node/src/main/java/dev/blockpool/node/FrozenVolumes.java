package dev.blockpool.node;

import java.util.Optional;

/**
 * The volumes whose file systems a group snapshot of this driver froze and the kernel has not
 * yet answered thawed. Answered from memory: NodeGetVolumeHealth asks it, also while the pool does not answer.
 */
public interface FrozenVolumes {

    /** Since when the volume's file system may be frozen, why, and what to do; empty when it is not. */
    Optional<String> frozen(String volumeId);

    /** Where nothing is frozen: a driver that freezes nothing. */
    FrozenVolumes NONE = _ -> Optional.empty();
}
