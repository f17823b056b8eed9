package dev.blockpool.peer;

import dev.blockpool.common.StorageException;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.Locale;

/**
 * A peer's answer as the pool's callers take failures: what the peer judged of the request keeps
 * its kind (a source it does not hold is NOT_FOUND); anything else, a peer that cannot be reached,
 * is busy, or failed in its own way, is UNAVAILABLE, so that a pull resumes later.
 */
final class PeerFailures {

    private PeerFailures() {}

    static StorageException of(StatusRuntimeException failure, PeerAddress peer, String doing) {
        Status status = failure.getStatus();
        String said = status.getDescription() != null
                ? status.getDescription()
                : status.getCode().name().toLowerCase(Locale.ROOT).replace('_', ' ');
        String message = doing + " on node " + peer + ": " + said;
        StorageException.Kind kind = switch (status.getCode()) {
            case NOT_FOUND -> StorageException.Kind.NOT_FOUND;
            case INVALID_ARGUMENT -> StorageException.Kind.INVALID;
            case ALREADY_EXISTS -> StorageException.Kind.CONFLICT;
            case ABORTED -> StorageException.Kind.BUSY;
            case FAILED_PRECONDITION, UNIMPLEMENTED -> StorageException.Kind.PRECONDITION;
            case OUT_OF_RANGE -> StorageException.Kind.OUT_OF_RANGE;
            default -> StorageException.Kind.UNAVAILABLE;
        };
        return new StorageException(kind, message, failure);
    }
}
