package dev.blockpool.peer;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.Optional;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;

/**
 * The node a peer call comes from, as its certificate names it: the TLS handshake proved the
 * client holds that certificate's key. Calls that act for a node on this node's pool (a volume's
 * retirement) act only for the node the certificate names.
 */
final class CallerNode implements ServerInterceptor {

    private static final Context.Key<String> NODE = Context.key("blockpool-peer-caller");

    /** The calling node; empty outside a peer call, or where no certificate names one. */
    static Optional<String> current() {
        return Optional.ofNullable(NODE.get());
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        Optional<String> node = nodeOf(call.getAttributes().get(Grpc.TRANSPORT_ATTR_SSL_SESSION));
        return node.isEmpty()
                ? next.startCall(call, headers)
                : Contexts.interceptCall(Context.current().withValue(NODE, node.get()), call, headers, next);
    }

    private static Optional<String> nodeOf(SSLSession session) {
        if (session == null) {
            return Optional.empty();
        }
        try {
            Certificate[] chain = session.getPeerCertificates();
            return chain.length > 0 && chain[0] instanceof X509Certificate leaf
                    ? Certificates.nodeOf(leaf)
                    : Optional.empty();
        } catch (SSLPeerUnverifiedException e) {
            return Optional.empty();
        }
    }
}
