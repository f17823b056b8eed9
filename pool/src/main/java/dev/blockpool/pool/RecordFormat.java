package dev.blockpool.pool;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.datatype.jdk8.Jdk8Module;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import dev.blockpool.common.StorageException;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.file.Path;
import java.util.stream.Collectors;

/**
 * How a record looks on disk: a JSON object with a top-level {@code formatVersion} beside the
 * record's own fields. A driver reads every format up to its own and refuses newer ones, so a
 * downgraded driver never misreads (or rewrites) what a newer one wrote.
 */
final class RecordFormat {

    /**
     * The newest format this driver writes and reads. Bump it when an older driver would misread
     * the new records; a record an older driver still reads right keeps the older format.
     */
    static final int VERSION = 2;
    /**
     * Format 2: a snapshot that is a member of a group snapshot. A driver of format 1 would
     * ignore its group and let it be deleted alone, breaking the group; it refuses format 2
     * instead. Every other record stays format 1, which such a driver still reads.
     */
    static final int GROUP_MEMBER = 2;
    static final String VERSION_FIELD = "formatVersion";
    /** The format of records written before the field existed. */
    private static final int UNVERSIONED = 1;

    private static final ObjectMapper JSON = JsonMapper.builder()
            .addModule(new Jdk8Module())
            .addModule(new JavaTimeModule())
            .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(SerializationFeature.INDENT_OUTPUT)
            .build();
    /** One reader per record type, built once: building one per read would cost more than the read. */
    private static final ClassValue<ObjectReader> READERS = new ClassValue<>() {
        @Override
        protected ObjectReader computeValue(Class<?> type) {
            return JSON.readerFor(type);
        }
    };

    private RecordFormat() {
    }

    static byte[] encode(Path path, Object record) {
        try {
            ObjectNode versioned = JSON.createObjectNode().put(VERSION_FIELD, versionOf(record));
            versioned.setAll((ObjectNode) JSON.valueToTree(record));
            return JSON.writeValueAsBytes(versioned);
        } catch (JsonProcessingException | IllegalArgumentException e) {
            throw StorageException.internal(e, "cannot encode the metadata for %s", path);
        }
    }

    /** The oldest format that holds the record as an older driver must understand it. */
    static int versionOf(Object record) {
        return record instanceof Snapshot snapshot && snapshot.groupSnapshotId().isPresent() ? GROUP_MEMBER
                : UNVERSIONED;
    }

    /** The record in {@code content}, read from {@code path} (named in every error). */
    static <T> T decode(Path path, byte[] content, Class<T> type) {
        requireReadableVersion(path, version(path, content));
        try {
            // the version field is no field of the record's: FAIL_ON_UNKNOWN_PROPERTIES is off
            return READERS.get(type).readValue(content);
        } catch (JsonProcessingException | IllegalArgumentException e) {
            throw damaged(path, describe(e), e);
        } catch (IOException e) {
            throw StorageException.io(e, "cannot read metadata %s", path);
        }
    }

    /**
     * The top-level {@code formatVersion}, or null when there is none; streams over the top level
     * only, and stops at the field, which the driver writes first.
     */
    private static JsonNode version(Path path, byte[] content) {
        try (JsonParser parser = JSON.createParser(content)) {
            JsonToken first = parser.nextToken();
            if (first == null) {
                throw damaged(path, "it is empty", null);
            }
            if (first != JsonToken.START_OBJECT) {
                throw damaged(path, "it holds no JSON object", null);
            }
            while (parser.nextToken() == JsonToken.FIELD_NAME) {
                String field = parser.currentName();
                parser.nextToken();
                if (field.equals(VERSION_FIELD)) {
                    return parser.readValueAsTree();
                }
                parser.skipChildren();
            }
            return null;
        } catch (JsonProcessingException e) {
            throw damaged(path, describe(e), e);
        } catch (IOException e) {
            throw StorageException.io(e, "cannot read metadata %s", path);
        }
    }

    private static void requireReadableVersion(Path path, JsonNode version) {
        if (version == null) {
            return; // written before records carried a version: UNVERSIONED, which every driver reads
        }
        if (!version.isIntegralNumber() || version.bigIntegerValue().compareTo(BigInteger.ONE) < 0) {
            throw damaged(path, "its " + VERSION_FIELD + " " + version + " is not a format version", null);
        }
        if (version.bigIntegerValue().compareTo(BigInteger.valueOf(VERSION)) > 0) {
            // PRECONDITION, not INTERNAL: nothing is damaged and nothing failed; the pool needs a
            // driver at least as new as the one that wrote the record, which only an operator can
            // install, and until then every call on it must be refused rather than guessed at.
            throw StorageException.precondition("metadata %s was written by a newer blockpool (record format %s; "
                    + "this driver reads formats %d to %d): upgrade the driver; the file is left as it is",
                    path, version, UNVERSIONED, VERSION);
        }
    }

    private static StorageException damaged(Path path, String why, Throwable cause) {
        return StorageException.internal(cause, "metadata %s cannot be read: %s; the pool needs an operator's look",
                path, why);
    }

    /** Where the JSON breaks or which field is wrong, in words rather than Jackson's class names. */
    private static String describe(Exception e) {
        if (e instanceof JsonMappingException mapping) {
            return mapping.getPath().isEmpty() ? "its fields do not make a valid record"
                    : "field " + fieldPath(mapping) + " is missing or invalid";
        }
        if (e instanceof JsonProcessingException parse && parse.getLocation() != null) {
            JsonLocation at = parse.getLocation();
            return "it is not valid JSON (line %d, column %d)".formatted(at.getLineNr(), at.getColumnNr());
        }
        return e instanceof IllegalArgumentException ? "its fields do not make a valid record" : "it is not valid JSON";
    }

    private static String fieldPath(JsonMappingException e) {
        String path = e.getPath().stream()
                .map(r -> r.getFieldName() != null ? "." + r.getFieldName() : "[" + r.getIndex() + "]")
                .collect(Collectors.joining());
        return path.startsWith(".") ? path.substring(1) : path;
    }
}
