package dev.blockpool.peer;

import java.math.BigInteger;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.cert.CertificateParsingException;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Instant;
import java.util.Collection;
import java.util.Date;
import java.util.List;
import java.util.Optional;
import javax.security.auth.x500.X500Principal;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.CertIOException;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * The certificates of the peer channel: the cluster CA's, and each node's own, which names the
 * node by the URI {@code blockpool://node/<node-id>} and serves it both as a server and as a
 * client. Keys are EC P-256, signatures ECDSA with SHA-256.
 */
final class Certificates {

    /** How a node's certificate names it: the prefix of its URI subject alternative name. */
    static final String NODE_URI_PREFIX = "blockpool://node/";

    private static final int URI_NAME = 6; // GeneralName.uniformResourceIdentifier, as the JDK numbers it
    private static final String SIGNATURE = "SHA256withECDSA";
    private static final SecureRandom RANDOM = new SecureRandom();

    private Certificates() {}

    static KeyPair newKeyPair() {
        try {
            KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
            generator.initialize(new ECGenParameterSpec("secp256r1"), RANDOM);
            return generator.generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("this Java runtime cannot make EC P-256 keys", e);
        }
    }

    /** A CA's own certificate, which signs the nodes' certificates. */
    static X509Certificate selfSignedCa(String name, KeyPair key, Instant notBefore, Instant notAfter) {
        X500Principal subject = new X500Principal("CN=" + name);
        var builder = new JcaX509v3CertificateBuilder(
                subject, serial(), Date.from(notBefore), Date.from(notAfter), subject, key.getPublic());
        try {
            JcaX509ExtensionUtils extensions = new JcaX509ExtensionUtils();
            builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(0));
            builder.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
            builder.addExtension(
                    Extension.subjectKeyIdentifier, false, extensions.createSubjectKeyIdentifier(key.getPublic()));
            return sign(builder, key.getPrivate());
        } catch (CertIOException | GeneralSecurityException e) {
            throw new IllegalStateException("making a CA certificate failed", e);
        }
    }

    /** A node's certificate, for {@code nodeKey}, signed by the CA {@code issuer} with {@code issuerKey}. */
    static X509Certificate forNode(
            String nodeId,
            PublicKey nodeKey,
            X509Certificate issuer,
            PrivateKey issuerKey,
            Instant notBefore,
            Instant notAfter) {
        var builder = new JcaX509v3CertificateBuilder(
                issuer,
                serial(),
                Date.from(notBefore),
                Date.from(notAfter),
                new X500Principal("CN=blockpool node " + nodeId.replaceAll("[,+=\"\\\\<>;#]", "_")),
                nodeKey);
        try {
            JcaX509ExtensionUtils extensions = new JcaX509ExtensionUtils();
            builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
            builder.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature));
            builder.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(new KeyPurposeId[] {
                KeyPurposeId.id_kp_serverAuth, KeyPurposeId.id_kp_clientAuth
            }));
            builder.addExtension(
                    Extension.subjectAlternativeName,
                    true,
                    new GeneralNames(new GeneralName(GeneralName.uniformResourceIdentifier, nodeUri(nodeId))));
            builder.addExtension(
                    Extension.authorityKeyIdentifier, false, extensions.createAuthorityKeyIdentifier(issuer));
            return sign(builder, issuerKey);
        } catch (CertIOException | GeneralSecurityException e) {
            throw new IllegalStateException("making the certificate of node " + nodeId + " failed", e);
        }
    }

    static String nodeUri(String nodeId) {
        return NODE_URI_PREFIX + encodePath(nodeId);
    }

    /** The node a certificate names; empty when it names none. */
    static Optional<String> nodeOf(X509Certificate certificate) {
        Collection<List<?>> names;
        try {
            names = certificate.getSubjectAlternativeNames();
        } catch (CertificateParsingException e) {
            return Optional.empty();
        }
        if (names == null) {
            return Optional.empty();
        }
        return names.stream()
                .filter(name -> Integer.valueOf(URI_NAME).equals(name.get(0)))
                .map(name -> (String) name.get(1))
                .filter(uri -> uri.startsWith(NODE_URI_PREFIX))
                .flatMap(uri -> decodePath(uri.substring(NODE_URI_PREFIX.length())).stream())
                .findFirst();
    }

    /** Whether {@code key} is the private half of {@code certificate}'s key: the CA certificate a key signs as. */
    static boolean matches(X509Certificate certificate, PrivateKey key) {
        try {
            byte[] probe = "blockpool".getBytes(StandardCharsets.US_ASCII);
            var signer = Signature.getInstance(SIGNATURE);
            signer.initSign(key);
            signer.update(probe);
            byte[] signature = signer.sign();
            var verifier = Signature.getInstance(SIGNATURE);
            verifier.initVerify(certificate.getPublicKey());
            verifier.update(probe);
            return verifier.verify(signature);
        } catch (GeneralSecurityException e) {
            return false;
        }
    }

    /** Node IDs are Kubernetes node names in practice; anything else is percent-encoded in the URI. */
    private static String encodePath(String nodeId) {
        StringBuilder encoded = new StringBuilder();
        for (byte b : nodeId.getBytes(StandardCharsets.UTF_8)) {
            char c = (char) (b & 0xff);
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || "-._~".indexOf(c) >= 0) {
                encoded.append(c);
            } else {
                encoded.append('%').append(String.format("%02X", b & 0xff));
            }
        }
        return encoded.toString();
    }

    private static Optional<String> decodePath(String encoded) {
        try {
            return Optional.of(URI.create("x:" + encoded).getSchemeSpecificPart());
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
    }

    private static BigInteger serial() {
        return new BigInteger(127, RANDOM).add(BigInteger.ONE);
    }

    private static X509Certificate sign(X509v3CertificateBuilder builder, PrivateKey key)
            throws GeneralSecurityException {
        try {
            return new JcaX509CertificateConverter()
                    .getCertificate(builder.build(new JcaContentSignerBuilder(SIGNATURE).build(key)));
        } catch (OperatorCreationException e) {
            throw new GeneralSecurityException("cannot sign with the CA's key", e);
        }
    }
}
