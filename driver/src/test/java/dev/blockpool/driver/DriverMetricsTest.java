package dev.blockpool.driver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import csi.v1.ControllerGrpc;
import csi.v1.Csi.ProbeRequest;
import csi.v1.Csi.VolumeCapability;
import csi.v1.IdentityGrpc;
import dev.blockpool.common.Endpoint;
import dev.blockpool.csi.CsiRequests;
import dev.blockpool.csi.PoolScope;
import dev.blockpool.csi.RawRequests;
import dev.blockpool.csi.UnixSocketChannels;
import dev.blockpool.metrics.HttpAddress;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.stub.ClientCalls;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A driver started with --http-endpoint: what a scrape of it shows after a few calls. */
class DriverMetricsTest {

    private static final MethodDescriptor<byte[], byte[]> RAW_PROBE =
            RawRequests.method(IdentityGrpc.getProbeMethod().getFullMethodName());

    @TempDir
    Path dir;

    @Test
    void theCallsAreCountedAsTheCoSawThemBesideThePoolAndTheBuild() throws Exception {
        Driver.Running running = startWithMetrics();
        EventLoopGroup loop = UnixSocketChannels.clientLoop();
        ManagedChannel channel = channel(loop);
        try {
            // refused by the guard in front of the service: the CO sees INVALID_ARGUMENT, and so does the histogram
            StatusRuntimeException malformed = catchThrowableOfType(
                    StatusRuntimeException.class,
                    () -> ClientCalls.blockingUnaryCall(
                            channel, RAW_PROBE, CallOptions.DEFAULT, new byte[] {(byte) 0xff, (byte) 0xff}));
            assertThat(malformed.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
            IdentityGrpc.newBlockingStub(channel).probe(ProbeRequest.getDefaultInstance());
            ControllerGrpc.newBlockingStub(channel)
                    .createVolume(CsiRequests.createVolume(
                                    "pvc-1",
                                    1 << 20,
                                    CsiRequests.block(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
                            .build());

            String text = scrape(running.metrics().orElseThrow().port());

            String series = "csi_plugin_operations_seconds_count{driver_name=\"blockpool.csi.dev\",grpc_status_code=";
            assertThat(text)
                    .contains(series + "\"InvalidArgument\",method_name=\"/csi.v1.Identity/Probe\"} 1")
                    .contains(series + "\"OK\",method_name=\"/csi.v1.Identity/Probe\"} 1")
                    .contains(series + "\"OK\",method_name=\"/csi.v1.Controller/CreateVolume\"} 1")
                    .contains("blockpool_build_info{csi_spec_version=\"" + System.getProperty("csi.spec.version")
                            + "\",driver_name=\"blockpool.csi.dev\",mode=\"controller\""
                            + ",pool_scope=\"shared\",version=\"1.2.3\"} 1")
                    .contains("# TYPE blockpool_pool_volumes gauge");
        } finally {
            channel.shutdownNow();
            loop.shutdownGracefully();
            running.stop(Duration.ofSeconds(5));
        }
    }

    /**
     * A thousand connections to the metrics port, each sending 180 headers of 2,000 bytes and never
     * ending its request, as a pod with no credentials can: the driver answers its CSI calls all
     * the while, and once they let go the next scrape answers.
     */
    @Test
    void aThousandHostileConnectionsToTheMetricsPortLeaveTheDriverServing() throws Exception {
        Driver.Running running = startWithMetrics();
        EventLoopGroup loop = UnixSocketChannels.clientLoop();
        ManagedChannel channel = channel(loop);
        List<SocketChannel> hostile = new ArrayList<>();
        try {
            int port = running.metrics().orElseThrow().port();
            // Connected without waiting: beyond the server's bound they wait in the listen backlog or are closed.
            for (int i = 0; i < 1000; i++) {
                SocketChannel client = SocketChannel.open();
                hostile.add(client);
                client.configureBlocking(false);
                client.connect(new InetSocketAddress("127.0.0.1", port));
            }
            ByteBuffer request = hostileRequest();
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (System.nanoTime() < until) {
                for (SocketChannel client : hostile) {
                    sendOnceConnected(client, request);
                }
                assertThat(IdentityGrpc.newBlockingStub(channel)
                                .withDeadlineAfter(10, TimeUnit.SECONDS)
                                .probe(ProbeRequest.getDefaultInstance())
                                .getReady()
                                .getValue())
                        .as("Probe while the metrics port is under attack")
                        .isTrue();
                Thread.sleep(200);
            }
            for (SocketChannel client : hostile) {
                client.close();
            }
            assertThat(scrape(port)).contains("# TYPE blockpool_pool_volumes gauge");
        } finally {
            for (SocketChannel client : hostile) {
                client.close();
            }
            channel.shutdownNow();
            loop.shutdownGracefully();
            running.stop(Duration.ofSeconds(5));
        }
    }

    /** The hostile request, once the channel has connected; what the socket takes, so it never blocks. */
    private static void sendOnceConnected(SocketChannel client, ByteBuffer request) {
        try {
            if (client.isConnectionPending() && client.finishConnect()) {
                client.write(request.duplicate());
            }
        } catch (IOException closed) {
            // refused or closed by the server: nothing more to send
        }
    }

    /** A request line and 180 headers of 2,000 bytes, with no end. */
    private static ByteBuffer hostileRequest() {
        StringBuilder request = new StringBuilder("GET /metrics HTTP/1.1\r\nHost: scraper\r\n");
        for (int i = 0; i < 180; i++) {
            request.append("X-Pad-")
                    .append(i)
                    .append(": ")
                    .append("a".repeat(2000))
                    .append("\r\n");
        }
        return ByteBuffer.wrap(request.toString().getBytes(StandardCharsets.US_ASCII))
                .asReadOnlyBuffer();
    }

    /** A controller on a shared pool in the test's directory, serving metrics on a port of its own. */
    private Driver.Running startWithMetrics() throws IOException {
        return new Driver(
                        new DriverConfig(
                                Endpoint.parse(dir.resolve("csi.sock").toString()),
                                "node-1",
                                "blockpool.csi.dev",
                                dir.resolve("pool"),
                                Mode.CONTROLLER,
                                8,
                                PoolScope.Kind.SHARED,
                                Optional.of(new HttpAddress("127.0.0.1", 0))),
                        "1.2.3")
                .start();
    }

    private ManagedChannel channel(EventLoopGroup loop) {
        return UnixSocketChannels.channel(dir.resolve("csi.sock"), loop);
    }

    private static String scrape(int port) throws Exception {
        try (HttpClient client = HttpClient.newHttpClient()) {
            HttpResponse<String> response = client.send(
                    HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(response.statusCode()).isEqualTo(200);
            return response.body();
        }
    }
}
