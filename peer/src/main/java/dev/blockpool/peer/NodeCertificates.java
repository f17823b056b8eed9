package dev.blockpool.peer;

import io.grpc.util.AdvancedTlsX509KeyManager;
import io.grpc.util.AdvancedTlsX509TrustManager;
import java.io.IOException;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedKeyManager;
import javax.net.ssl.X509ExtendedTrustManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This node's identity on the peer channel: a certificate it issues itself, signed by the cluster
 * CA ({@link ClusterCa}), short-lived and never written to disk, and the CA certificates it trusts.
 * {@link #refresh} issues a new one at half the certificate's life and whenever the CA's files
 * change (a rotation); the key and trust managers the TLS contexts hold see each new one at the
 * next handshake, so neither server nor channels are rebuilt.
 */
public final class NodeCertificates implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(NodeCertificates.class);

    /** How long a node's certificate is valid; it is renewed at half of it. */
    static final Duration LIFETIME = Duration.ofHours(24);
    /** How far back a certificate's validity starts: the other nodes' clocks may be that far behind. */
    static final Duration CLOCK_SKEW = Duration.ofMinutes(5);
    /** How often the CA's files are looked at: a mounted Secret changes within a minute or two. */
    public static final Duration CHECK_EVERY = Duration.ofMinutes(1);

    private final Path caDir;
    private final String nodeId;
    private final InstantSource clock;
    private final AdvancedTlsX509KeyManager keyManager = new AdvancedTlsX509KeyManager();
    private final AdvancedTlsX509TrustManager trustManager;

    private byte[] bundleRead = new byte[0];
    private byte[] keyRead = new byte[0];
    private Instant renewAt = Instant.MIN;
    private Instant validUntil = Instant.MIN;
    private ScheduledExecutorService renewals;

    private NodeCertificates(Path caDir, String nodeId, InstantSource clock) throws CertificateException {
        this.caDir = caDir;
        this.nodeId = nodeId;
        this.clock = clock;
        // The chain alone: which node a certificate names is checked beside it (expecting).
        this.trustManager = AdvancedTlsX509TrustManager.newBuilder()
                .setVerification(AdvancedTlsX509TrustManager.Verification.CERTIFICATE_ONLY_VERIFICATION)
                .build();
    }

    /** This node's certificate, issued from the CA in {@code caDir}. */
    public static NodeCertificates issue(Path caDir, String nodeId) throws IOException, GeneralSecurityException {
        return issue(caDir, nodeId, InstantSource.system());
    }

    static NodeCertificates issue(Path caDir, String nodeId, InstantSource clock)
            throws IOException, GeneralSecurityException {
        NodeCertificates certificates = new NodeCertificates(caDir, nodeId, clock);
        certificates.refresh();
        return certificates;
    }

    public String nodeId() {
        return nodeId;
    }

    /**
     * Issues a new certificate when the CA's files changed since they were last read or the
     * current one is past half its life; true when it did. A CA that cannot be read leaves the
     * current certificate in use.
     */
    public synchronized boolean refresh() throws IOException, GeneralSecurityException {
        byte[] bundle = Files.readAllBytes(caDir.resolve(ClusterCa.BUNDLE));
        byte[] key = Files.readAllBytes(caDir.resolve(ClusterCa.KEY));
        Instant now = clock.instant();
        if (Arrays.equals(bundle, bundleRead) && Arrays.equals(key, keyRead) && now.isBefore(renewAt)) {
            return false;
        }
        ClusterCa ca = ClusterCa.of(bundle, key, caDir);
        KeyPair nodeKey = Certificates.newKeyPair();
        Instant notAfter = now.plus(LIFETIME);
        X509Certificate certificate = Certificates.forNode(
                nodeId, nodeKey.getPublic(), ca.signer(), ca.signingKey(), now.minus(CLOCK_SKEW), notAfter);
        trustManager.updateTrustCredentials(ca.trusted().toArray(X509Certificate[]::new));
        keyManager.updateIdentityCredentials(new X509Certificate[] {certificate, ca.signer()}, nodeKey.getPrivate());
        bundleRead = bundle;
        keyRead = key;
        renewAt = now.plus(LIFETIME.dividedBy(2));
        validUntil = notAfter;
        log.info(
                "issued the peer certificate of node {}, valid until {}, signed by {}; trusting {} CA certificate(s)",
                nodeId,
                notAfter,
                ca.signer().getSubjectX500Principal().getName(),
                ca.trusted().size());
        return true;
    }

    /** Calls {@link #refresh} every {@code period} on a thread of its own, until {@link #close}. */
    public synchronized void refreshEvery(Duration period) {
        if (renewals != null) {
            return;
        }
        renewals = Executors.newSingleThreadScheduledExecutor(
                Thread.ofPlatform().name("peer-certificates").daemon().factory());
        renewals.scheduleWithFixedDelay(
                this::refreshOrWarn, period.toMillis(), period.toMillis(), TimeUnit.MILLISECONDS);
    }

    private void refreshOrWarn() {
        try {
            refresh();
        } catch (IOException | GeneralSecurityException | RuntimeException e) {
            log.warn(
                    "cannot issue a new peer certificate from the CA in {}: {}; the current one is valid until {}",
                    caDir,
                    e.getMessage(),
                    validUntilNow());
        }
    }

    private synchronized Instant validUntilNow() {
        return validUntil;
    }

    X509ExtendedKeyManager keyManager() {
        return keyManager;
    }

    /** Trusts a client whose chain leads to a CA of the bundle and whose certificate names a node. */
    X509ExtendedTrustManager trustingAnyNode() {
        return new Expecting(trustManager, Optional.empty());
    }

    /** Trusts a server whose chain leads to a CA of the bundle and whose certificate names {@code node}. */
    X509ExtendedTrustManager trustingOnly(String node) {
        return new Expecting(trustManager, Optional.of(node));
    }

    @Override
    public synchronized void close() {
        if (renewals != null) {
            renewals.shutdownNow();
        }
    }

    /** A certificate of the CA that does not name the node expected: said in words of its own. */
    static final class NotThatNode extends CertificateException {
        NotThatNode(String message) {
            super(message);
        }
    }

    /** The chain checked by the CA's trust manager, then the node its first certificate names. */
    private static final class Expecting extends X509ExtendedTrustManager {

        private final X509ExtendedTrustManager chain;
        private final Optional<String> node;

        Expecting(X509ExtendedTrustManager chain, Optional<String> node) {
            this.chain = chain;
            this.node = node;
        }

        @Override
        public void checkClientTrusted(X509Certificate[] certificates, String authType, SSLEngine engine)
                throws CertificateException {
            check(() -> chain.checkClientTrusted(certificates, authType, engine), certificates);
        }

        @Override
        public void checkServerTrusted(X509Certificate[] certificates, String authType, SSLEngine engine)
                throws CertificateException {
            check(() -> chain.checkServerTrusted(certificates, authType, engine), certificates);
        }

        @Override
        public void checkClientTrusted(X509Certificate[] certificates, String authType, Socket socket)
                throws CertificateException {
            check(() -> chain.checkClientTrusted(certificates, authType, socket), certificates);
        }

        @Override
        public void checkServerTrusted(X509Certificate[] certificates, String authType, Socket socket)
                throws CertificateException {
            check(() -> chain.checkServerTrusted(certificates, authType, socket), certificates);
        }

        @Override
        public void checkClientTrusted(X509Certificate[] certificates, String authType) throws CertificateException {
            check(() -> chain.checkClientTrusted(certificates, authType), certificates);
        }

        @Override
        public void checkServerTrusted(X509Certificate[] certificates, String authType) throws CertificateException {
            check(() -> chain.checkServerTrusted(certificates, authType), certificates);
        }

        @Override
        public X509Certificate[] getAcceptedIssuers() {
            return chain.getAcceptedIssuers();
        }

        private interface ChainCheck {
            void run() throws CertificateException;
        }

        private void check(ChainCheck chainCheck, X509Certificate[] certificates) throws CertificateException {
            chainCheck.run();
            namesNode(certificates);
        }

        private void namesNode(X509Certificate[] certificates) throws CertificateException {
            Optional<String> named = Certificates.nodeOf(certificates[0]);
            if (named.isEmpty()) {
                throw new NotThatNode("the peer's certificate names no blockpool node");
            }
            if (node.isPresent() && !node.get().equals(named.get())) {
                throw new NotThatNode("the peer's certificate is node " + named.get() + "'s, not node " + node.get()
                        + "'s: the address given for " + node.get() + " is another node's");
            }
        }
    }
}
