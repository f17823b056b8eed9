package dev.blockpool.common;

import io.grpc.Status;

/**
 * The one exception the driver throws on purpose: a gRPC status code from the CSI spec and a
 * message a person can act on. The server's interceptor turns it into the RPC's response.
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

    public static CsiException aborted(String format, Object... args) {
        return new CsiException(Status.Code.ABORTED, format.formatted(args));
    }

    public static CsiException internal(String format, Object... args) {
        return new CsiException(Status.Code.INTERNAL, format.formatted(args));
    }

    public static CsiException internal(Throwable cause, String format, Object... args) {
        return new CsiException(Status.Code.INTERNAL, format.formatted(args), cause);
    }

    /** The CSI status for a failure of the layers below the services. */
    public static Status statusOf(StorageException e) {
        Status.Code code = switch (e.kind()) {
            case INVALID -> Status.Code.INVALID_ARGUMENT;
            case NOT_FOUND -> Status.Code.NOT_FOUND;
            case CONFLICT -> Status.Code.ALREADY_EXISTS;
            case BUSY -> Status.Code.ABORTED;
            case PRECONDITION -> Status.Code.FAILED_PRECONDITION;
            case OUT_OF_RANGE -> Status.Code.OUT_OF_RANGE;
            case NO_SPACE -> Status.Code.RESOURCE_EXHAUSTED;
            case INTERNAL -> Status.Code.INTERNAL;
        };
        return Status.fromCode(code).withDescription(e.getMessage());
    }
}
