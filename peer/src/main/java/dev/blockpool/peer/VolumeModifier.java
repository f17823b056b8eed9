package dev.blockpool.peer;

import csi.v1.Csi.ControllerModifyVolumeRequest;
import csi.v1.Csi.ControllerModifyVolumeResponse;
import dev.blockpool.csi.CsiException;

/**
 * ControllerModifyVolume as this node applies it to a volume its own pool holds, on behalf of
 * another node's controller. It throws {@code StorageException} or {@code CsiException} as the
 * controller does; the peer server answers with the status the CSI socket would. It must not
 * hand the request on to another node (a peer channel's client refuses to while it runs).
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
