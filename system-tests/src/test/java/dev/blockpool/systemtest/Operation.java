package dev.blockpool.systemtest;

import com.google.protobuf.Message;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.function.Function;

/** One step of the caller. */
sealed interface Operation {

    /** The RPC or action, e.g. "NodeStageVolume": what kill delays and the kill statistics are kept by. */
    String type();

    /** What it does to which object, for the log and for violations. */
    String description();

    /** The volume or snapshot ID it concerns, known before any answer (IDs derive from names). */
    String subjectId();

    /**
     * A CSI call, sent again with the same request until it gets a definite answer. {@code onSuccess}
     * updates what the caller believes and says what was wrong with the answer, if anything.
     */
    record Call(
            String type,
            String description,
            String subjectId,
            Function<DriverProcess, Message> send,
            Function<Message, Optional<String>> onSuccess)
            implements Operation {}

    /** What a pod does between calls (write and fsync data, read it back); says what went wrong, if anything. */
    record PodAction(String type, String description, String subjectId, Callable<Optional<String>> run)
            implements Operation {}
}
