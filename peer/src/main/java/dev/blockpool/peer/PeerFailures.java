package dev.blockpool.peer;

import dev.blockpool.common.StorageException;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.security.cert.CertificateException;
import java.security.cert.CertificateExpiredException;
import java.security.cert.CertificateNotYetValidException;
import java.util.Locale;
import javax.net.ssl.SSLException;

/**
 * A peer's answer as the pool's callers take failures: what the peer judged of the request keeps
 * its kind (a source it does not hold is NOT_FOUND); anything else, a peer that cannot be reached,
 * is busy, or failed in its own way, is UNAVAILABLE, so that a pull resumes later.
 */
final class PeerFailures {

    private PeerFailures() {}

    static StorageException of(StatusRuntimeException failure, PeerAddress peer, String doing) {
        Status status = failure.getStatus();
        String message = doing + " on " + peer + ": " + said(failure);
        StorageException.Kind kind = switch (status.getCode()) {
            case NOT_FOUND -> StorageException.Kind.NOT_FOUND;
            case INVALID_ARGUMENT -> StorageException.Kind.INVALID;
            case ALREADY_EXISTS -> StorageException.Kind.CONFLICT;
            case ABORTED -> StorageException.Kind.BUSY;
            case FAILED_PRECONDITION, UNIMPLEMENTED, PERMISSION_DENIED -> StorageException.Kind.PRECONDITION;
            case OUT_OF_RANGE -> StorageException.Kind.OUT_OF_RANGE;
            default -> StorageException.Kind.UNAVAILABLE;
        };
        return new StorageException(kind, message, failure);
    }

    /**
     * What went wrong, in words: a refused certificate says why (it names another node, it is of
     * another CA), rather than the transport's "io exception"; else the peer's own description.
     */
    static String said(Throwable failure) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof NodeCertificates.NotThatNode refused) {
                return "its certificate was refused: " + refused.getMessage();
            }
            if (cause instanceof CertificateExpiredException || cause instanceof CertificateNotYetValidException) {
                return "its certificate was refused: it is out of its validity (are the two nodes' clocks apart?)";
            }
            if (cause instanceof CertificateException) {
                return "its certificate was refused: it does not lead to a CA of this node's " + ClusterCa.BUNDLE
                        + " (is it of this cluster's peer CA?)";
            }
        }
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof SSLException) {
                // the peer refused this node's certificate: its alert is all it says
                return "the TLS handshake failed: does it have this node's certificate's CA in its " + ClusterCa.BUNDLE
                        + "?";
            }
        }
        if (failure instanceof StatusRuntimeException e) {
            Status status = e.getStatus();
            String description = status.getDescription();
            return description != null
                    ? description.lines().findFirst().orElse(description)
                    : status.getCode().name().toLowerCase(Locale.ROOT).replace('_', ' ');
        }
        return "no answer";
    }
}
