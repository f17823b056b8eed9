package dev.blockpool.peer;

import static org.assertj.core.api.Assertions.assertThat;

import java.security.KeyPair;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** What a node's certificate names, and which CA certificate a key belongs to. */
class CertificatesTest {

    private static final Instant NOW = Instant.parse("2026-01-01T00:00:00Z");

    private final KeyPair caKey = Certificates.newKeyPair();
    private final X509Certificate ca = Certificates.selfSignedCa("test CA", caKey, NOW, NOW.plus(Duration.ofDays(1)));

    @Test
    void aNodeCertificateNamesItsNodeWhateverCharactersItsIdHas() {
        for (String node : new String[] {"node-a", "worker.example.com", "a node/with,odd=chars%ü"}) {
            X509Certificate certificate = Certificates.forNode(
                    node, Certificates.newKeyPair().getPublic(), ca, caKey.getPrivate(), NOW, NOW.plusSeconds(60));

            assertThat(Certificates.nodeOf(certificate)).contains(node);
        }
    }

    @Test
    void aCaCertificateNamesNoNode() {
        assertThat(Certificates.nodeOf(ca)).isEmpty();
    }

    @Test
    void aKeyMatchesOnlyItsOwnCertificate() {
        assertThat(Certificates.matches(ca, caKey.getPrivate())).isTrue();
        assertThat(Certificates.matches(ca, Certificates.newKeyPair().getPrivate()))
                .isFalse();
    }
}
