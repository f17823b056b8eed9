package dev.blockpool.common;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.channels.ClosedByInterruptException;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.util.Locale;

/**
 * The error vocabulary of the layers below the CSI services (the pool and the host side). It
 * says what went wrong in storage terms; the services' edge maps each {@link Kind} to a CSI
 * status code, so nothing below the edge knows gRPC. The message is for a person: it names the
 * volume, path or command, never a Java class.
 */
public final class StorageException extends RuntimeException {

    /** What kind of failure, in the terms a caller can act on. */
    public enum Kind {
        /** The request's values can never work (a bad size, flag or name). */
        INVALID,
        /** The volume, snapshot, node or path does not exist. */
        NOT_FOUND,
        /** Something else already exists under that name or at that path. */
        CONFLICT,
        /** Another operation holds the object; retrying later will do. */
        BUSY,
        /** The system is not in the state the operation needs (staged, unpublished, formatted, ...). */
        PRECONDITION,
        /** A size beyond what the pool or the request's limit allows. */
        OUT_OF_RANGE,
        /** The pool's filesystem is full or over its quota, or a node's attach limit is reached. */
        EXHAUSTED,
        /**
         * What the call needs does not answer in time (a pool whose server is gone, a system call
         * left waiting in the kernel); the work may still finish, and a retry later will do.
         */
        UNAVAILABLE,
        /** Anything else: a host tool or the filesystem failed unexpectedly. */
        INTERNAL
    }

    private final Kind kind;

    public StorageException(Kind kind, String message, Throwable cause) {
        super(message, cause);
        this.kind = kind;
    }

    public Kind kind() {
        return kind;
    }

    public static StorageException invalid(String format, Object... args) {
        return new StorageException(Kind.INVALID, format.formatted(args), null);
    }

    public static StorageException notFound(String format, Object... args) {
        return new StorageException(Kind.NOT_FOUND, format.formatted(args), null);
    }

    public static StorageException conflict(String format, Object... args) {
        return new StorageException(Kind.CONFLICT, format.formatted(args), null);
    }

    public static StorageException busy(String format, Object... args) {
        return new StorageException(Kind.BUSY, format.formatted(args), null);
    }

    public static StorageException precondition(String format, Object... args) {
        return new StorageException(Kind.PRECONDITION, format.formatted(args), null);
    }

    public static StorageException outOfRange(String format, Object... args) {
        return new StorageException(Kind.OUT_OF_RANGE, format.formatted(args), null);
    }

    /** The pool's filesystem is full or over its quota. */
    public static StorageException noSpace(String format, Object... args) {
        return new StorageException(Kind.EXHAUSTED, format.formatted(args), null);
    }

    /** A limit on how many of something there may be is reached (a node's attached volumes). */
    public static StorageException limitReached(String format, Object... args) {
        return new StorageException(Kind.EXHAUSTED, format.formatted(args), null);
    }

    public static StorageException unavailable(String format, Object... args) {
        return new StorageException(Kind.UNAVAILABLE, format.formatted(args), null);
    }

    public static StorageException internal(String format, Object... args) {
        return new StorageException(Kind.INTERNAL, format.formatted(args), null);
    }

    public static StorageException internal(Throwable cause, String format, Object... args) {
        return new StorageException(Kind.INTERNAL, format.formatted(args), cause);
    }

    /**
     * An I/O error where it arose, as "what we were doing: what the system said". A full
     * filesystem or an exceeded quota is {@link Kind#EXHAUSTED}; an interrupted thread (a channel
     * closed by the interrupt) {@link Kind#BUSY}, said as an interruption; anything else INTERNAL.
     */
    public static StorageException io(IOException cause, String format, Object... args) {
        String doing = format.formatted(args);
        if (cause instanceof ClosedByInterruptException || cause instanceof InterruptedIOException) {
            // not the disk's answer: this thread was interrupted (a driver stopping), and the call may be retried
            return new StorageException(Kind.BUSY, doing + ": interrupted", cause);
        }
        String said = systemReason(cause);
        Kind kind = isNoSpace(said) ? Kind.EXHAUSTED : Kind.INTERNAL;
        return new StorageException(kind, said.isEmpty() ? doing : doing + ": " + said, cause);
    }

    /** A failed system call where it arose, as {@link #io(IOException, String, Object...)} words it. */
    public static StorageException io(Libc.ErrnoException cause, String format, Object... args) {
        boolean noSpace = cause.errno() == Libc.ENOSPC || cause.errno() == Libc.EDQUOT;
        return new StorageException(
                noSpace ? Kind.EXHAUSTED : Kind.INTERNAL, format.formatted(args) + ": " + cause.getMessage(), cause);
    }

    /** Whether a system error text (errno's message, or a tool's stderr) says the disk is full. */
    public static boolean isNoSpace(String text) {
        String lower = text.toLowerCase(Locale.ROOT);
        return lower.contains("no space left on device") || lower.contains("disk quota exceeded");
    }

    /** The system's own words: a FileSystemException's reason rather than its path-first message. */
    private static String systemReason(IOException e) {
        if (e instanceof FileSystemException fse) {
            String reason = fse.getReason();
            if (reason != null) {
                return reason;
            }
            // NoSuchFileException and friends carry only the path; say what they mean.
            if (e instanceof NoSuchFileException) {
                return "no such file or directory";
            }
            if (e instanceof FileAlreadyExistsException) {
                return "it already exists";
            }
            if (e instanceof DirectoryNotEmptyException) {
                return "the directory is not empty";
            }
            if (e instanceof AccessDeniedException) {
                return "permission denied";
            }
            if (e instanceof NotDirectoryException) {
                return "not a directory";
            }
            return "input/output error";
        }
        return e.getMessage() == null ? "input/output error" : e.getMessage();
    }
}
