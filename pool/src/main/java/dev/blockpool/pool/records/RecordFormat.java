package dev.blockpool.pool.records;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import dev.blockpool.common.StorageException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.StringWriter;
import java.math.BigInteger;
import java.nio.file.Path;

/**
 * How a record looks on disk: a JSON object with a top-level {@code formatVersion} beside the
 * record's own fields. A driver reads every format up to its own and refuses newer ones, so a
 * downgraded driver never misreads (or rewrites) what a newer one wrote.
 */
public final class RecordFormat {

    /**
     * The newest format this driver writes and reads. Bump it when an older driver would misread
     * the new records; a record an older driver still reads right keeps the older format.
     */
    public static final int VERSION = 2;
    /**
     * Format 2: a snapshot that is a member of a group snapshot. A driver of format 1 would
     * ignore its group and let it be deleted alone, breaking the group; it refuses format 2
     * instead. Every other record stays format 1, which such a driver still reads.
     */
    public static final int GROUP_MEMBER = 2;

    static final String VERSION_FIELD = "formatVersion";
    /** The format of records written before the field existed. */
    public static final int UNVERSIONED = 1;

    private static final JsonFactory JSON = new JsonFactory();

    private RecordFormat() {}

    /**
     * The record as a JSON object: its {@code formatVersion} first, then its fields, indented by
     * Jackson's default pretty printer, in UTF-8.
     */
    public static <T> byte[] encode(Path path, T record, RecordCodec<T> codec) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (JsonGenerator out = JSON.createGenerator(bytes, JsonEncoding.UTF8).useDefaultPrettyPrinter()) {
            out.writeStartObject();
            out.writeNumberField(VERSION_FIELD, codec.formatVersion(record));
            codec.writeFields(out, record);
            out.writeEndObject();
        } catch (InvalidField e) {
            throw StorageException.internal("cannot encode the record for %s: field %s has no value", path, e.path());
        } catch (IOException e) {
            throw StorageException.internal(e, "cannot encode the record for %s", path);
        }
        return bytes.toByteArray();
    }

    /** The record in {@code content}, read from {@code path} (named in every error). */
    public static <T> T decode(Path path, byte[] content, RecordCodec<T> codec) {
        requireReadableVersion(path, content);
        try (JsonParser in = JSON.createParser(content)) {
            in.nextToken();
            return codec.read(in);
        } catch (InvalidField e) {
            String why = e.path().isEmpty()
                    ? "its fields do not make a valid record"
                    : "field " + e.path() + " is missing or invalid";
            throw damaged(path, why, e.getCause());
        } catch (JsonProcessingException e) {
            throw damaged(path, describe(e), e);
        } catch (IOException e) {
            throw StorageException.io(e, "cannot read record %s", path);
        }
    }

    /**
     * Refuses a record whose top-level {@code formatVersion} is newer than this driver's, or is no
     * version; one without the field was written before records carried a version: UNVERSIONED,
     * which every driver reads. Streams over the top level only, and stops at the field, which the
     * driver writes first.
     */
    private static void requireReadableVersion(Path path, byte[] content) {
        try (JsonParser in = JSON.createParser(content)) {
            JsonToken first = in.nextToken();
            if (first == null) {
                throw damaged(path, "it is empty", null);
            }
            if (first != JsonToken.START_OBJECT) {
                throw damaged(path, "it holds no JSON object", null);
            }
            while (in.nextToken() == JsonToken.FIELD_NAME) {
                String field = in.currentName();
                in.nextToken();
                if (field.equals(VERSION_FIELD)) {
                    requireReadable(path, in);
                    return;
                }
                in.skipChildren();
            }
        } catch (JsonProcessingException e) {
            throw damaged(path, describe(e), e);
        } catch (IOException e) {
            throw StorageException.io(e, "cannot read record %s", path);
        }
    }

    private static void requireReadable(Path path, JsonParser version) throws IOException {
        if (version.currentToken() != JsonToken.VALUE_NUMBER_INT
                || version.getBigIntegerValue().compareTo(BigInteger.ONE) < 0) {
            throw damaged(path, "its " + VERSION_FIELD + " " + asJson(version) + " is not a format version", null);
        }
        if (version.getBigIntegerValue().compareTo(BigInteger.valueOf(VERSION)) > 0) {
            // PRECONDITION, not INTERNAL: nothing is damaged and nothing failed; the pool needs a
            // driver at least as new as the one that wrote the record, which only an operator can
            // install, and until then every call on it must be refused rather than guessed at.
            throw StorageException.precondition(
                    "record %s was written by a newer blockpool (record format %s; "
                            + "this driver reads formats %d to %d): upgrade the driver; the file is left as it is",
                    path, version.getBigIntegerValue(), UNVERSIONED, VERSION);
        }
    }

    /** The value the parser is at, as compact JSON: what a message quotes of a value that is not what it should be. */
    private static String asJson(JsonParser value) throws IOException {
        StringWriter json = new StringWriter();
        try (JsonGenerator out = JSON.createGenerator(json)) {
            out.copyCurrentStructure(value);
        }
        return json.toString();
    }

    private static StorageException damaged(Path path, String why, Throwable cause) {
        return StorageException.internal(
                cause, "record %s cannot be read: %s; the pool needs an operator's look", path, why);
    }

    /** Where the JSON breaks, in words rather than Jackson's class names. */
    private static String describe(JsonProcessingException e) {
        JsonLocation at = e.getLocation();
        return at == null
                ? "it is not valid JSON"
                : "it is not valid JSON (line %d, column %d)".formatted(at.getLineNr(), at.getColumnNr());
    }
}
