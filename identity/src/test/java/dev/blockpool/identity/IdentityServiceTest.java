package dev.blockpool.identity;

import static org.assertj.core.api.Assertions.assertThat;

import csi.v1.Csi.GetPluginCapabilitiesRequest;
import csi.v1.Csi.GetPluginInfoRequest;
import csi.v1.Csi.PluginCapability;
import csi.v1.Csi.ProbeRequest;
import csi.v1.IdentityGrpc;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class IdentityServiceTest {

    private final List<String> problems = new ArrayList<>();
    private Server server;
    private ManagedChannel channel;

    private IdentityGrpc.IdentityBlockingStub start(List<PluginCapability> capabilities) throws Exception {
        String name = InProcessServerBuilder.generateName();
        server = InProcessServerBuilder.forName(name)
                .directExecutor()
                .addService(
                        new IdentityService("blockpool.csi.dev", "1.2.3", capabilities, () -> List.copyOf(problems)))
                .build()
                .start();
        channel = InProcessChannelBuilder.forName(name).directExecutor().build();
        return IdentityGrpc.newBlockingStub(channel);
    }

    @AfterEach
    void stop() {
        channel.shutdownNow();
        server.shutdownNow();
    }

    @Test
    void pluginInfoCarriesNameAndVersion() throws Exception {
        var info = start(List.of()).getPluginInfo(GetPluginInfoRequest.getDefaultInstance());
        assertThat(info.getName()).isEqualTo("blockpool.csi.dev");
        assertThat(info.getVendorVersion()).isEqualTo("1.2.3");
    }

    @Test
    void capabilitiesAreExactlyThoseGiven() throws Exception {
        var controller = IdentityService.service(PluginCapability.Service.Type.CONTROLLER_SERVICE);
        var caps = start(List.of(controller)).getPluginCapabilities(GetPluginCapabilitiesRequest.getDefaultInstance());
        assertThat(caps.getCapabilitiesList()).containsExactly(controller);
    }

    @Test
    void probeFollowsReadiness() throws Exception {
        var identity = start(List.of());
        assertThat(identity.probe(ProbeRequest.getDefaultInstance()).getReady().getValue())
                .isTrue();
        problems.add("pool directory /nope does not exist");
        var probe = identity.probe(ProbeRequest.getDefaultInstance());
        assertThat(probe.hasReady()).isTrue();
        assertThat(probe.getReady().getValue()).isFalse();
    }
}
