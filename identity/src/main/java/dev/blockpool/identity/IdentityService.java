package dev.blockpool.identity;

import com.google.protobuf.BoolValue;
import csi.v1.Csi.GetPluginCapabilitiesRequest;
import csi.v1.Csi.GetPluginCapabilitiesResponse;
import csi.v1.Csi.GetPluginInfoRequest;
import csi.v1.Csi.GetPluginInfoResponse;
import csi.v1.Csi.PluginCapability;
import csi.v1.Csi.ProbeRequest;
import csi.v1.Csi.ProbeResponse;
import csi.v1.IdentityGrpc;
import dev.blockpool.csi.UnaryReply;
import io.grpc.stub.StreamObserver;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** CSI Identity: who the plugin is, what it offers, and whether it is ready. */
public final class IdentityService extends IdentityGrpc.IdentityImplBase {

    private static final Logger log = LoggerFactory.getLogger(IdentityService.class);

    private final String driverName;
    private final String version;
    private final List<PluginCapability> capabilities;
    private final Readiness readiness;

    public IdentityService(
            String driverName, String version, List<PluginCapability> capabilities, Readiness readiness) {
        this.driverName = driverName;
        this.version = version;
        this.capabilities = List.copyOf(capabilities);
        this.readiness = readiness;
    }

    /** Capability of a service the plugin serves, e.g. CONTROLLER_SERVICE. */
    public static PluginCapability service(PluginCapability.Service.Type type) {
        return PluginCapability.newBuilder()
                .setService(PluginCapability.Service.newBuilder().setType(type))
                .build();
    }

    public static PluginCapability expansion(PluginCapability.VolumeExpansion.Type type) {
        return PluginCapability.newBuilder()
                .setVolumeExpansion(
                        PluginCapability.VolumeExpansion.newBuilder().setType(type))
                .build();
    }

    @Override
    public void getPluginInfo(GetPluginInfoRequest request, StreamObserver<GetPluginInfoResponse> response) {
        UnaryReply.send(
                response,
                GetPluginInfoResponse.newBuilder()
                        .setName(driverName)
                        .setVendorVersion(version)
                        .build());
    }

    @Override
    public void getPluginCapabilities(
            GetPluginCapabilitiesRequest request, StreamObserver<GetPluginCapabilitiesResponse> response) {
        UnaryReply.send(
                response,
                GetPluginCapabilitiesResponse.newBuilder()
                        .addAllCapabilities(capabilities)
                        .build());
    }

    @Override
    public void probe(ProbeRequest request, StreamObserver<ProbeResponse> response) {
        List<String> problems = readiness.problems();
        if (!problems.isEmpty()) {
            log.warn("not ready: {}", String.join("; ", problems));
        }
        UnaryReply.send(
                response,
                ProbeResponse.newBuilder()
                        .setReady(BoolValue.of(problems.isEmpty()))
                        .build());
    }
}
