package dev.blockpool.csi;

import io.grpc.Status;

/**
 * A CSI status code and a message a person can act on, thrown by the services themselves for
 * what only the edge can judge: a malformed request, a token it did not issue. The layers below
 * throw {@link dev.blockpool.common.StorageException} instead; {@link StatusInterceptor} turns
 * both into the RPC's status.
 */
public final class CsiException extends RuntimeException {

    private final Status.Code code;

    public CsiException(Status.Code code, String message) {
        super(message);
        this.code = code;
    }

    public CsiException(Status.Code code, String message, Throwable cause) {
        super(message, cause);
        this.code = code;
    }

    public Status.Code code() {
        return code;
    }

    public Status toStatus() {
        return Status.fromCode(code).withDescription(getMessage());
    }

    public static CsiException invalidArgument(String format, Object... args) {
        return new CsiException(Status.Code.INVALID_ARGUMENT, format.formatted(args));
    }

    public static CsiException notFound(String format, Object... args) {
        return new CsiException(Status.Code.NOT_FOUND, format.formatted(args));
    }

    public static CsiException alreadyExists(String format, Object... args) {
        return new CsiException(Status.Code.ALREADY_EXISTS, format.formatted(args));
    }

    public static CsiException failedPrecondition(String format, Object... args) {
        return new CsiException(Status.Code.FAILED_PRECONDITION, format.formatted(args));
    }

    public static CsiException outOfRange(String format, Object... args) {
        return new CsiException(Status.Code.OUT_OF_RANGE, format.formatted(args));
    }

    public static CsiException resourceExhausted(String format, Object... args) {
        return new CsiException(Status.Code.RESOURCE_EXHAUSTED, format.formatted(args));
    }

    public static CsiException permissionDenied(String format, Object... args) {
        return new CsiException(Status.Code.PERMISSION_DENIED, format.formatted(args));
    }

    public static CsiException unimplemented(String format, Object... args) {
        return new CsiException(Status.Code.UNIMPLEMENTED, format.formatted(args));
    }

    public static CsiException aborted(String format, Object... args) {
        return new CsiException(Status.Code.ABORTED, format.formatted(args));
    }

    public static CsiException internal(String format, Object... args) {
        return new CsiException(Status.Code.INTERNAL, format.formatted(args));
    }

    public static CsiException internal(Throwable cause, String format, Object... args) {
        return new CsiException(Status.Code.INTERNAL, format.formatted(args), cause);
    }
}
