package dev.blockpool.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import csi.v1.ControllerGrpc;
import csi.v1.Csi.CreateVolumeRequest;
import csi.v1.Csi.CreateVolumeResponse;
import csi.v1.Csi.DeleteVolumeRequest;
import csi.v1.Csi.DeleteVolumeResponse;
import csi.v1.Csi.NodeGetCapabilitiesRequest;
import csi.v1.Csi.NodeGetCapabilitiesResponse;
import csi.v1.NodeGrpc;
import dev.blockpool.common.StorageException;
import dev.blockpool.csi.StatusInterceptor;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.StreamObserver;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The call histogram as a CO's dashboard reads it: each call once, by method and by the code the CO got. */
class CallHistogramTest {

    private static final String DRIVER = "test.csi.dev";
    private static final String CREATE = "/csi.v1.Controller/CreateVolume";

    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final CountDownLatch deleteStarted = new CountDownLatch(1);
    private final CountDownLatch deleteCancelled = new CountDownLatch(1);
    private Server server;
    private ManagedChannel channel;

    @BeforeEach
    void serve() throws Exception {
        var controller = new ControllerGrpc.ControllerImplBase() {
            @Override
            public void createVolume(CreateVolumeRequest request, StreamObserver<CreateVolumeResponse> response) {
                throw StorageException.noSpace("the pool has 0 bytes free");
            }

            @Override
            public void deleteVolume(DeleteVolumeRequest request, StreamObserver<DeleteVolumeResponse> response) {
                // never answers: the CO gives up first
                Context.current().addListener(context -> deleteCancelled.countDown(), Runnable::run);
                deleteStarted.countDown();
            }
        };
        var node = new NodeGrpc.NodeImplBase() {
            @Override
            public void nodeGetCapabilities(
                    NodeGetCapabilitiesRequest request, StreamObserver<NodeGetCapabilitiesResponse> response) {
                response.onNext(NodeGetCapabilitiesResponse.getDefaultInstance());
                response.onCompleted();
            }
        };
        CallHistogram calls = new CallHistogram(registry, DRIVER);
        String name = InProcessServerBuilder.generateName();
        server = InProcessServerBuilder.forName(name)
                .addService(ServerInterceptors.intercept(controller, new StatusInterceptor(), calls))
                .addService(ServerInterceptors.intercept(node, new StatusInterceptor(), calls))
                .build()
                .start();
        channel = InProcessChannelBuilder.forName(name).build();
    }

    @AfterEach
    void stop() throws InterruptedException {
        channel.shutdownNow();
        server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }

    @Test
    void aFailedCallIsCountedWithTheCodeTheCoSaw() {
        var controller = ControllerGrpc.newBlockingStub(channel);
        for (int i = 0; i < 2; i++) {
            String name = "pvc-" + i;
            assertThatThrownBy(() -> controller.createVolume(
                            CreateVolumeRequest.newBuilder().setName(name).build()))
                    .hasMessageStartingWith("RESOURCE_EXHAUSTED");
        }

        String text = Scrape.of(registry);

        assertThat(Scrape.values(
                        text,
                        "csi_plugin_operations_seconds_count{driver_name=\"" + DRIVER
                                + "\",grpc_status_code=\"ResourceExhausted\",method_name=\"" + CREATE + "\"}"))
                .containsExactly(2.0);
        assertThat(Scrape.lines(text, "csi_plugin_operations_seconds_count", "grpc_status_code=\"OK\""))
                .isEmpty();
    }

    @Test
    void everyServiceIsCountedUnderItsWireName() {
        NodeGrpc.newBlockingStub(channel).nodeGetCapabilities(NodeGetCapabilitiesRequest.getDefaultInstance());

        assertThat(Scrape.lines(
                        Scrape.of(registry),
                        "csi_plugin_operations_seconds_count",
                        "method_name=\"/csi.v1.Node/NodeGetCapabilities\"",
                        "grpc_status_code=\"OK\""))
                .hasSize(1)
                .allSatisfy(line -> assertThat(line).endsWith(" 1"));
    }

    @Test
    void theBucketsAreThoseOfCsiLibUtils() {
        NodeGrpc.newBlockingStub(channel).nodeGetCapabilities(NodeGetCapabilitiesRequest.getDefaultInstance());

        List<Double> bounds = Scrape.lines(Scrape.of(registry), "csi_plugin_operations_seconds_bucket").stream()
                .map(line -> line.replaceAll(".*le=\"([^\"]+)\".*", "$1"))
                .map(le -> le.equals("+Inf") ? Double.POSITIVE_INFINITY : Double.parseDouble(le))
                .toList();

        assertThat(bounds)
                .containsExactly(
                        .1,
                        .25,
                        .5,
                        1.0,
                        2.5,
                        5.0,
                        10.0,
                        15.0,
                        25.0,
                        50.0,
                        120.0,
                        300.0,
                        600.0,
                        Double.POSITIVE_INFINITY);
    }

    @Test
    void aCallTheCoCancelsIsCountedCanceledOnce() throws InterruptedException {
        Context.CancellableContext giveUp = Context.current().withCancellation();
        giveUp.run(() -> ControllerGrpc.newStub(channel)
                .deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId("v").build(), new Ignored<>()));
        assertThat(deleteStarted.await(30, TimeUnit.SECONDS)).isTrue();
        giveUp.cancel(null);
        assertThat(deleteCancelled.await(30, TimeUnit.SECONDS)).isTrue();

        // the server hears of the cancel on its own threads: wait until it has counted it
        List<String> counted = List.of();
        for (int i = 0; i < 300 && counted.isEmpty(); i++) {
            counted = Scrape.lines(
                    Scrape.of(registry),
                    "csi_plugin_operations_seconds_count",
                    "method_name=\"/csi.v1.Controller/DeleteVolume\"");
            if (counted.isEmpty()) {
                Thread.sleep(100);
            }
        }
        assertThat(counted)
                .singleElement()
                .satisfies(line -> assertThat(line)
                        .contains("grpc_status_code=\"Canceled\"")
                        .endsWith(" 1"));
    }

    @Test
    void everyCodeIsSpelledAsGrpcGoSpellsIt() {
        assertThat(Arrays.stream(Status.Code.values()).map(CallHistogram::goName))
                .containsExactly(
                        "OK",
                        "Canceled",
                        "Unknown",
                        "InvalidArgument",
                        "DeadlineExceeded",
                        "NotFound",
                        "AlreadyExists",
                        "PermissionDenied",
                        "ResourceExhausted",
                        "FailedPrecondition",
                        "Aborted",
                        "OutOfRange",
                        "Unimplemented",
                        "Internal",
                        "Unavailable",
                        "DataLoss",
                        "Unauthenticated");
    }

    private static final class Ignored<T> implements StreamObserver<T> {
        @Override
        public void onNext(T value) {}

        @Override
        public void onError(Throwable t) {}

        @Override
        public void onCompleted() {}
    }
}
