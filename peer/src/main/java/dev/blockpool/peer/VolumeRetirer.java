package dev.blockpool.peer;

import dev.blockpool.csi.CsiException;
import java.util.Optional;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * What this node does for a volume of its pool that moves to another node ({@code blockpool-csi
 * move}, docs/moving.md): says what holds it here, and, once the other node has committed its
 * copy, deletes this one. It throws {@code StorageException} or {@code CsiException} as the
 * controller does; the peer server answers with the status the CSI socket would.
 */
public interface VolumeRetirer {

    /** What holds the volume on this node (its loop device, mounts), in words; empty when nothing does. */
    Optional<String> holder(String volumeId);

    /**
     * Deletes this node's copy of the volume, which moved to {@code movedToNode}, as DeleteVolume
     * would: FAILED_PRECONDITION while something holds it here; nothing when it is gone already.
     */
    void retire(String volumeId, String movedToNode);

    /** The retirer of these two calls. */
    static VolumeRetirer of(Function<String, Optional<String>> holder, BiConsumer<String, String> retire) {
        return new VolumeRetirer() {
            @Override
            public Optional<String> holder(String volumeId) {
                return holder.apply(volumeId);
            }

            @Override
            public void retire(String volumeId, String movedToNode) {
                retire.accept(volumeId, movedToNode);
            }
        };
    }

    /** Lets no volume move away: nothing holds one, and none is retired. */
    VolumeRetirer NONE = of(volumeId -> Optional.empty(), (volumeId, movedToNode) -> {
        throw CsiException.unimplemented("this node's driver retires no volume for other nodes (volume %s)", volumeId);
    });
}
