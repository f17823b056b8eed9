package dev.blockpool.pool.records;

/**
 * A value of a record on disk that is missing or of the wrong shape, and where it is, built up as
 * the exception leaves each enclosing object and array: {@code attachments[0].nodeId}. Cheap to
 * make (no stack trace): it only becomes the message of the error that names the file.
 */
final class InvalidField extends RuntimeException {

    /** From the outermost value down: ".name" for a field or a map's key, "[i]" for an element. */
    private final String path;

    InvalidField() {
        this("", null);
    }

    /** The record's own check of its values refused them. */
    InvalidField(IllegalArgumentException cause) {
        this("", cause);
    }

    private InvalidField(String path, Throwable cause) {
        super(null, cause, false, false);
        this.path = path;
    }

    /** The same value, seen from the object that holds it under {@code name}. */
    InvalidField in(String name) {
        return new InvalidField("." + name + path, getCause());
    }

    /** The same value, seen from the array that holds it at {@code index}. */
    InvalidField at(int index) {
        return new InvalidField("[" + index + "]" + path, getCause());
    }

    /** Where the value is, such as {@code source.kind} or {@code accessTypes[1]}; empty for the record itself. */
    String path() {
        return path.startsWith(".") ? path.substring(1) : path;
    }
}
