package dev.blockpool.peer;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.PrivateKey;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.List;
import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.openssl.PEMKeyPair;
import org.bouncycastle.openssl.PEMParser;
import org.bouncycastle.openssl.jcajce.JcaPEMKeyConverter;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.openssl.jcajce.JcaPKCS8Generator;

/**
 * Certificates and keys as PEM text, the form of the CA's files: a bundle of any number of
 * certificates, and one private key (PKCS#8 as written here; the SEC1 form openssl writes is read
 * too). Messages name the file, never its contents.
 */
final class Pem {

    private Pem() {}

    static List<X509Certificate> certificates(byte[] pem, String file) throws GeneralSecurityException {
        List<X509Certificate> certificates =
                CertificateFactory.getInstance("X.509").generateCertificates(new ByteArrayInputStream(pem)).stream()
                        .map(X509Certificate.class::cast)
                        .toList();
        if (certificates.isEmpty()) {
            throw new GeneralSecurityException(file + " holds no certificate");
        }
        return certificates;
    }

    static PrivateKey privateKey(byte[] pem, String file) throws GeneralSecurityException {
        try (PEMParser parser = new PEMParser(new StringReader(new String(pem, StandardCharsets.US_ASCII)))) {
            Object read = parser.readObject();
            JcaPEMKeyConverter converter = new JcaPEMKeyConverter();
            if (read instanceof PrivateKeyInfo info) {
                return converter.getPrivateKey(info);
            }
            if (read instanceof PEMKeyPair pair) {
                return converter.getKeyPair(pair).getPrivate();
            }
            throw new GeneralSecurityException(file + " holds no unencrypted private key");
        } catch (IOException e) {
            throw new GeneralSecurityException(file + " is not a PEM private key", e);
        }
    }

    static String text(List<X509Certificate> certificates) {
        StringWriter out = new StringWriter();
        try (JcaPEMWriter writer = new JcaPEMWriter(out)) {
            for (X509Certificate certificate : certificates) {
                writer.writeObject(certificate);
            }
        } catch (IOException e) {
            throw new IllegalStateException("writing PEM to memory failed", e);
        }
        return out.toString();
    }

    static String text(KeyPair key) {
        StringWriter out = new StringWriter();
        try (JcaPEMWriter writer = new JcaPEMWriter(out)) {
            writer.writeObject(new JcaPKCS8Generator(key.getPrivate(), null));
        } catch (IOException e) {
            throw new IllegalStateException("writing PEM to memory failed", e);
        }
        return out.toString();
    }
}
