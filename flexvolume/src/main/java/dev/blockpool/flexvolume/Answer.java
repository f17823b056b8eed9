package dev.blockpool.flexvolume;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;

/**
 * The one JSON object a FlexVolume call answers with, and its exit status. kubelet reads the
 * status ("Success", "Failure", "Not supported"), the message, and from {@code init} the
 * capabilities; it treats a "Success" with a non-zero exit as a driver bug, so the exit status
 * follows the status: 0 for Success and Not supported, 1 for Failure.
 */
record Answer(Status status, String message, boolean withCapabilities) {

    enum Status {
        SUCCESS("Success", 0),
        FAILURE("Failure", 1),
        NOT_SUPPORTED("Not supported", 0);

        final String wire;
        final int exitStatus;

        Status(String wire, int exitStatus) {
            this.wire = wire;
            this.exitStatus = exitStatus;
        }
    }

    private static final JsonFactory JSON = new JsonFactory();

    static Answer success(String message) {
        return new Answer(Status.SUCCESS, message, false);
    }

    static Answer failure(String message) {
        return new Answer(Status.FAILURE, message, false);
    }

    static Answer notSupported(String operation) {
        return new Answer(
                Status.NOT_SUPPORTED, operation + " is not supported by blockpool's FlexVolume driver", false);
    }

    /**
     * init's answer. attach is false: in FlexVolume, attach runs in the controller-manager and must
     * return a device path that is valid on the node, but a blockpool volume only becomes a device
     * (a loop device over its image) when the node plugin stages it on that node. So kubelet calls
     * mount alone, which stages and publishes through the node plugin, and unmount.
     */
    static Answer initialized() {
        return new Answer(
                Status.SUCCESS, "blockpool FlexVolume driver: mount and unmount through the node plugin", true);
    }

    int exitStatus() {
        return status.exitStatus;
    }

    /** One line, no newline. */
    String toJson() {
        StringWriter out = new StringWriter();
        try (JsonGenerator json = JSON.createGenerator(out)) {
            json.writeStartObject();
            json.writeStringField("status", status.wire);
            json.writeStringField("message", message);
            if (withCapabilities) {
                json.writeObjectFieldStart("capabilities");
                json.writeBooleanField("attach", false);
                json.writeEndObject();
            }
            json.writeEndObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a StringWriter does not fail
        }
        return out.toString();
    }
}
