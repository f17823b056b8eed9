package dev.blockpool.peer;

import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.netty.handler.ssl.ClientAuth;
import io.grpc.netty.shaded.io.netty.handler.ssl.OpenSsl;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslProvider;
import javax.net.ssl.SSLException;

/**
 * The TLS of the peer channel: TLS 1.3 only, each side presenting its node's certificate and
 * trusting only the cluster CA's. Built as Netty contexts rather than gRPC's TlsServerCredentials
 * because those cannot pin the protocol version. Either provider asks the key and trust managers
 * of {@link NodeCertificates} at each handshake, so a renewed certificate or a rotated CA takes
 * effect with the next connection. BoringSSL, which grpc-netty-shaded carries, where it loads:
 * the JDK's AES-GCM is fast only once C2 compiles it, and the driver runs C1 alone
 * (bin/jvm.options), which held a transfer to a few MiB a second (docs/performance-transfer.md).
 */
final class PeerTls {

    static final String TLS_1_3 = "TLSv1.3";
    static final SslProvider PROVIDER = OpenSsl.isAvailable() ? SslProvider.OPENSSL : SslProvider.JDK;

    private PeerTls() {}

    /** The server's: a client must present a certificate of the CA that names a node. */
    static SslContext server(NodeCertificates certificates) throws SSLException {
        SslContextBuilder builder = SslContextBuilder.forServer(certificates.keyManager())
                .trustManager(certificates.trustingAnyNode())
                .clientAuth(ClientAuth.REQUIRE)
                .protocols(TLS_1_3);
        return GrpcSslContexts.configure(builder, PROVIDER).build();
    }

    /** A client's of {@code node}: the server must present a certificate of the CA that names that node. */
    static SslContext client(NodeCertificates certificates, String node) throws SSLException {
        SslContextBuilder builder = GrpcSslContexts.forClient()
                .keyManager(certificates.keyManager())
                .trustManager(certificates.trustingOnly(node))
                .protocols(TLS_1_3);
        return GrpcSslContexts.configure(builder, PROVIDER).build();
    }
}
