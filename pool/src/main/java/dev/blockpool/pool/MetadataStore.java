package dev.blockpool.pool;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.datatype.jdk8.Jdk8Module;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import dev.blockpool.common.StorageException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** JSON records in one pool directory, one file per ID, written with {@link DurableFiles}. */
final class MetadataStore<T> {

    private static final Logger log = LoggerFactory.getLogger(MetadataStore.class);

    static final String SUFFIX = ".json";

    private static final ObjectMapper JSON = JsonMapper.builder()
            .addModule(new Jdk8Module())
            .addModule(new JavaTimeModule())
            .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(SerializationFeature.INDENT_OUTPUT)
            .build();

    private final Path directory;
    private final Class<T> type;

    MetadataStore(Path directory, Class<T> type) {
        this.directory = directory;
        this.type = type;
    }

    Path path(String id) {
        return directory.resolve(id + SUFFIX);
    }

    boolean exists(String id) {
        return Files.exists(path(id));
    }

    /** The record, or empty when it has no file; a file that cannot be read is an error. */
    Optional<T> read(String id) {
        Path path = path(id);
        byte[] content;
        try {
            content = Files.readAllBytes(path);
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException e) {
            throw StorageException.io(e, "cannot read metadata %s", path);
        }
        return Optional.of(decode(path, content, type));
    }

    void write(String id, T record) {
        byte[] content;
        try {
            content = JSON.writeValueAsBytes(record);
        } catch (JsonProcessingException e) {
            throw StorageException.internal(e, "cannot encode the metadata for %s", path(id));
        }
        DurableFiles.write(path(id), content);
    }

    boolean delete(String id) {
        return DurableFiles.delete(path(id));
    }

    /**
     * Every readable record, sorted by ID. A record that cannot be parsed is logged and left out,
     * so one damaged file does not hide the rest of the pool.
     */
    List<T> readAll() {
        List<T> records = new ArrayList<>();
        for (String id : ids()) {
            try {
                read(id).ifPresent(records::add);
            } catch (StorageException e) {
                log.error("{}", e.getMessage());
            }
        }
        return records;
    }

    /** IDs with a metadata file, sorted; files that are not records of ours are ignored. */
    List<String> ids() {
        try (Stream<Path> files = Files.list(directory)) {
            return files.map(p -> p.getFileName().toString())
                    .filter(n -> n.endsWith(SUFFIX))
                    .map(n -> n.substring(0, n.length() - SUFFIX.length()))
                    .sorted()
                    .toList();
        } catch (IOException e) {
            throw StorageException.io(e, "cannot list the pool directory %s", directory);
        }
    }

    /** Why the metadata file cannot be read as a {@code type}, or empty when it can. */
    static Optional<String> problem(Path path, Class<?> type) {
        try {
            decode(path, Files.readAllBytes(path), type);
            return Optional.empty();
        } catch (IOException e) {
            return Optional.of(StorageException.io(e, "cannot read metadata %s", path).getMessage());
        } catch (StorageException e) {
            return Optional.of(e.getMessage());
        }
    }

    private static <R> R decode(Path path, byte[] content, Class<R> type) {
        if (new String(content, StandardCharsets.UTF_8).isBlank()) {
            throw StorageException.internal("metadata %s is empty; the pool needs an operator's look", path);
        }
        try {
            return JSON.readValue(content, type);
        } catch (IOException e) {
            throw unreadable(path, e);
        }
    }

    /** A damaged record, described by where the JSON breaks, never by Jackson's class names. */
    private static StorageException unreadable(Path path, IOException e) {
        String why;
        if (e instanceof JsonMappingException mapping && !mapping.getPath().isEmpty()) {
            why = "field " + fieldPath(mapping) + " is missing or invalid";
        } else if (e instanceof JsonMappingException) {
            why = "its fields do not make a valid record";
        } else if (e instanceof JsonProcessingException parse && parse.getLocation() != null) {
            JsonLocation at = parse.getLocation();
            why = "it is not valid JSON (line %d, column %d)".formatted(at.getLineNr(), at.getColumnNr());
        } else {
            why = "it is not valid JSON";
        }
        return StorageException.internal(e, "metadata %s cannot be read: %s; the pool needs an operator's look",
                path, why);
    }

    private static String fieldPath(JsonMappingException e) {
        String path = e.getPath().stream()
                .map(r -> r.getFieldName() != null ? "." + r.getFieldName() : "[" + r.getIndex() + "]")
                .collect(Collectors.joining());
        return path.startsWith(".") ? path.substring(1) : path;
    }
}
