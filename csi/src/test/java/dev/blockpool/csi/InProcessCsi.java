package dev.blockpool.csi;

import io.grpc.BindableService;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.concurrent.TimeUnit;

/**
 * Serves CSI services in-process through the driver's {@link StatusInterceptor}, so a test calls
 * them with a blocking stub and sees exactly the status codes and messages a CO sees.
 */
public final class InProcessCsi implements AutoCloseable {

    private final Server server;
    private final ManagedChannel channel;

    private InProcessCsi(Server server, ManagedChannel channel) {
        this.server = server;
        this.channel = channel;
    }

    public static InProcessCsi serve(BindableService... services) {
        String name = InProcessServerBuilder.generateName();
        InProcessServerBuilder builder = InProcessServerBuilder.forName(name);
        for (BindableService service : services) {
            builder.addService(ServerInterceptors.intercept(service, new StatusInterceptor()));
        }
        try {
            Server server = builder.build().start();
            return new InProcessCsi(
                    server, InProcessChannelBuilder.forName(name).build());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public ManagedChannel channel() {
        return channel;
    }

    @Override
    public void close() {
        channel.shutdownNow();
        server.shutdownNow();
        try {
            server.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
