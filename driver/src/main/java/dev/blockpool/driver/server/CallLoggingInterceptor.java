package dev.blockpool.driver.server;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import com.google.protobuf.TextFormat;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.StringJoiner;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

/**
 * Logs every RPC once when it ends: method, the IDs that say what it was about, duration and
 * status code, at a level that follows the code ({@link #levelOf}). At debug level the whole
 * request and response follow, with secrets masked.
 */
public final class CallLoggingInterceptor implements ServerInterceptor {

    private static final Logger log = LoggerFactory.getLogger("rpc");
    /** Top-level request fields worth naming in the one-line summary. */
    private static final List<String> KEY_FIELDS = List.of(
            "name",
            "volume_id",
            "snapshot_id",
            "source_volume_id",
            "node_id",
            "target_path",
            "staging_target_path",
            "volume_path");
    /** The {@link #KEY_FIELDS} each request type has, looked up once per type rather than by name on every call. */
    private static final Map<Descriptor, List<FieldDescriptor>> KEY_FIELDS_OF = new ConcurrentHashMap<>();

    private static final TextFormat.Printer ONE_LINE = TextFormat.printer().emittingSingleLine(true);
    /**
     * Asked every few seconds by probes and sidecars, and every minute for each mounted volume by
     * kubelet (its volume stats): logged at debug level when they succeed.
     */
    private static final Set<String> ROUTINE_METHODS = Set.of(
            "csi.v1.Identity/Probe",
            "csi.v1.Identity/GetPluginInfo",
            "csi.v1.Identity/GetPluginCapabilities",
            "csi.v1.Controller/ControllerGetCapabilities",
            "csi.v1.Node/NodeGetCapabilities",
            "csi.v1.Node/NodeGetInfo",
            "csi.v1.Node/NodeGetVolumeStats");

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        long started = System.nanoTime();
        String method = call.getMethodDescriptor().getFullMethodName();
        Object[] request = new Object[1];
        ServerCall<Q, R> logging = new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
            @Override
            public void sendMessage(R message) {
                logMessage(method, "response", message);
                super.sendMessage(message);
            }

            @Override
            public void close(Status status, Metadata trailers) {
                Level level = levelOf(method, status.getCode());
                // The summary is built only when it is written: kubelet's stats calls are not, at info.
                if (log.isEnabledForLevel(level)) {
                    long millis = (System.nanoTime() - started) / 1_000_000;
                    String ids = request[0] instanceof Message m ? keyFields(m) : "";
                    if (status.isOk()) {
                        log.atLevel(level).log("{}{} -> OK ({} ms)", method, ids, millis);
                    } else {
                        log.atLevel(level)
                                .log(
                                        "{}{} -> {}: {} ({} ms)",
                                        method,
                                        ids,
                                        status.getCode(),
                                        status.getDescription(),
                                        millis);
                    }
                }
                super.close(status, trailers);
            }
        };
        return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(next.startCall(logging, headers)) {
            @Override
            public void onMessage(Q message) {
                request[0] = message;
                logMessage(method, "request", message);
                super.onMessage(message);
            }
        };
    }

    /**
     * How much a result matters to whoever reads the log. The codes the sidecars retry as a
     * matter of course are routine; a caller's mistake, a full pool or a caller that gave up
     * waiting (a sidecar's timeout on a slow mkfs) is worth a look; anything else is a failure to
     * look into.
     */
    static Level levelOf(String method, Status.Code code) {
        return switch (code) {
            case OK -> ROUTINE_METHODS.contains(method) ? Level.DEBUG : Level.INFO;
            case ABORTED, NOT_FOUND, ALREADY_EXISTS -> Level.INFO;
            case INVALID_ARGUMENT,
                    FAILED_PRECONDITION,
                    OUT_OF_RANGE,
                    RESOURCE_EXHAUSTED,
                    CANCELLED,
                    DEADLINE_EXCEEDED -> Level.WARN;
            default -> Level.ERROR;
        };
    }

    /** At debug level: the whole message on one line, secrets masked. */
    private static void logMessage(String method, String what, Object message) {
        if (log.isDebugEnabled() && message instanceof Message m) {
            log.debug("{} {}: {}", method, what, ONE_LINE.printToString(SecretRedactor.redact(m)));
        }
    }

    static String keyFields(Message request) {
        StringJoiner joined = new StringJoiner(" ", " [", "]").setEmptyValue("");
        for (FieldDescriptor field :
                KEY_FIELDS_OF.computeIfAbsent(request.getDescriptorForType(), CallLoggingInterceptor::keyFieldsOf)) {
            String value = (String) request.getField(field);
            if (!value.isEmpty()) {
                joined.add(field.getName() + "=" + value);
            }
        }
        return joined.toString();
    }

    private static List<FieldDescriptor> keyFieldsOf(Descriptor type) {
        return KEY_FIELDS.stream()
                .map(type::findFieldByName)
                .filter(field ->
                        field != null && field.getJavaType() == FieldDescriptor.JavaType.STRING && !field.isRepeated())
                .toList();
    }
}
