package dev.blockpool.peer;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The cluster's peer CA, as files in one directory (in Kubernetes a mounted Secret): {@value
 * #BUNDLE}, the CA certificates every node trusts (one, or two while the CA is rotated), and
 * {@value #KEY}, the key of one of them, with which each node signs its own certificate. While a
 * rotation is under way, {@value #NEXT_KEY} holds the new CA's key until it is switched to.
 *
 * <p>The key file is written with mode 0600 and replaced by a rename, never rewritten in place.
 */
public final class ClusterCa {

    public static final String BUNDLE = "ca.crt";
    public static final String KEY = "ca.key";
    public static final String NEXT_KEY = "ca.key.next";

    /** How long a CA made here is valid: long, since it is rotated by hand. */
    static final Duration CA_LIFETIME = Duration.ofDays(5 * 365);

    private final List<X509Certificate> trusted;
    private final X509Certificate signer;
    private final PrivateKey signingKey;

    /** Not a record: its text form would hold the key. */
    private ClusterCa(List<X509Certificate> trusted, X509Certificate signer, PrivateKey signingKey) {
        this.trusted = List.copyOf(trusted);
        this.signer = signer;
        this.signingKey = signingKey;
    }

    /** The CA certificates a node trusts. */
    public List<X509Certificate> trusted() {
        return trusted;
    }

    /** The certificate of the key nodes sign with. */
    public X509Certificate signer() {
        return signer;
    }

    PrivateKey signingKey() {
        return signingKey;
    }

    /** Reads the CA from {@code dir}: the bundle, the key, and which certificate of the bundle is the key's. */
    public static ClusterCa read(Path dir) throws IOException, GeneralSecurityException {
        return of(Files.readAllBytes(dir.resolve(BUNDLE)), Files.readAllBytes(dir.resolve(KEY)), dir);
    }

    /** The CA from the two files' contents as read from {@code dir}. */
    static ClusterCa of(byte[] bundle, byte[] key, Path dir) throws GeneralSecurityException {
        List<X509Certificate> trusted =
                Pem.certificates(bundle, dir.resolve(BUNDLE).toString());
        PrivateKey signingKey = Pem.privateKey(key, dir.resolve(KEY).toString());
        X509Certificate signer = trusted.stream()
                .filter(certificate -> Certificates.matches(certificate, signingKey))
                .findFirst()
                .orElseThrow(() -> new GeneralSecurityException(dir.resolve(KEY) + " is the key of no certificate in "
                        + dir.resolve(BUNDLE) + ": switch the key only after its certificate is in the bundle"));
        return new ClusterCa(trusted, signer, signingKey);
    }

    /** Makes a new CA in {@code dir}; refuses when the directory already holds one. */
    static void create(Path dir, Instant now) throws IOException {
        Files.createDirectories(dir);
        for (String file : List.of(BUNDLE, KEY, NEXT_KEY)) {
            if (Files.exists(dir.resolve(file))) {
                throw new FileAlreadyExistsException(
                        dir.resolve(file).toString(), null, "a CA is already there; --rotate replaces it step by step");
            }
        }
        KeyPair key = Certificates.newKeyPair();
        X509Certificate certificate = newCa(key, now);
        writeKey(dir, KEY, key);
        writeBundle(dir, List.of(certificate));
    }

    /**
     * A new CA as the text of its two files, {@value #BUNDLE} and {@value #KEY}, for a Secret
     * rather than a directory. The map holds the key: it goes to the API server, never to a log.
     */
    static Map<String, String> newFiles(Instant now) {
        KeyPair key = Certificates.newKeyPair();
        return Map.of(BUNDLE, Pem.text(List.of(newCa(key, now))), KEY, Pem.text(key));
    }

    /**
     * The first step of a rotation: a new CA whose certificate joins the bundle (every node trusts
     * it once it has read the bundle again) and whose key waits in {@value #NEXT_KEY}.
     */
    static void rotate(Path dir, Instant now) throws IOException, GeneralSecurityException {
        ClusterCa current = read(dir);
        if (Files.exists(dir.resolve(NEXT_KEY))) {
            throw new FileAlreadyExistsException(
                    dir.resolve(NEXT_KEY).toString(), null, "a rotation is under way; --switch-key continues it");
        }
        KeyPair key = Certificates.newKeyPair();
        List<X509Certificate> bundle = new ArrayList<>(current.trusted());
        bundle.add(newCa(key, now));
        writeKey(dir, NEXT_KEY, key);
        writeBundle(dir, bundle);
    }

    /** The second step: the nodes sign with the new CA's key from now on. */
    static void switchKey(Path dir) throws IOException, GeneralSecurityException {
        Path next = dir.resolve(NEXT_KEY);
        if (!Files.exists(next)) {
            throw new NoSuchFileException(next.toString(), null, "no rotation is under way; --rotate starts one");
        }
        of(Files.readAllBytes(dir.resolve(BUNDLE)), Files.readAllBytes(next), dir); // its certificate is in the bundle
        Files.move(next, dir.resolve(KEY), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /** The last step: the bundle keeps only the certificate of the key the nodes sign with. */
    static int retireOld(Path dir) throws IOException, GeneralSecurityException {
        ClusterCa current = read(dir);
        writeBundle(dir, List.of(current.signer()));
        return current.trusted().size() - 1;
    }

    private static X509Certificate newCa(KeyPair key, Instant now) {
        return Certificates.selfSignedCa(
                "blockpool peer CA " + now.getEpochSecond(),
                key,
                now.minus(Duration.ofMinutes(5)),
                now.plus(CA_LIFETIME));
    }

    private static void writeBundle(Path dir, List<X509Certificate> bundle) throws IOException {
        Path temporary = dir.resolve(BUNDLE + ".new");
        Files.deleteIfExists(temporary);
        Files.writeString(temporary, Pem.text(bundle), StandardCharsets.US_ASCII);
        Files.setPosixFilePermissions(temporary, PosixFilePermissions.fromString("rw-r--r--"));
        Files.move(temporary, dir.resolve(BUNDLE), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /** The key's file is made 0600 before anything is written to it. */
    private static void writeKey(Path dir, String name, KeyPair key) throws IOException {
        Path temporary = dir.resolve(name + ".new");
        Files.deleteIfExists(temporary);
        var ownerOnly = PosixFilePermissions.fromString("rw-------");
        Files.createFile(temporary, PosixFilePermissions.asFileAttribute(ownerOnly));
        Files.setPosixFilePermissions(temporary, ownerOnly); // whatever the umask made of it
        Files.writeString(temporary, Pem.text(key), StandardCharsets.US_ASCII);
        Files.move(temporary, dir.resolve(name), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }
}
