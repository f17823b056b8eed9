package dev.blockpool.peer;

import csi.v1.Csi.ControllerModifyVolumeRequest;
import csi.v1.Csi.ControllerModifyVolumeResponse;
import dev.blockpool.csi.CsiException;

/**
 * ControllerModifyVolume as this node applies it to a volume its own pool holds, on behalf of
 * another node's controller. It throws {@code StorageException} or {@code CsiException} as the
 * controller does; the peer server answers with the status the CSI socket would. It must not
 * hand the request on to another node: a {@link PeerClient} called on the thread that runs it
 * refuses to (its {@code modifyVolume} answers false), one called on another thread cannot tell.
 */
@FunctionalInterface
public interface VolumeModifier {

    ControllerModifyVolumeResponse modify(ControllerModifyVolumeRequest request);

    /** Takes no ControllerModifyVolume from peers. */
    VolumeModifier NONE = request -> {
        throw CsiException.unimplemented(
                "this node's driver applies no ControllerModifyVolume for other nodes (volume %s)",
                request.getVolumeId());
    };
}
