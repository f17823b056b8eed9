package dev.blockpool.pool;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.datatype.jdk8.Jdk8Module;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import dev.blockpool.common.CsiException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
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

    Optional<T> read(String id) {
        Path path = path(id);
        try {
            return Optional.of(JSON.readValue(Files.readAllBytes(path), type));
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException e) {
            throw CsiException.internal(e, "metadata %s is unreadable (%s); the pool needs an operator's look",
                    path, e.getMessage());
        }
    }

    void write(String id, T record) {
        try {
            DurableFiles.write(path(id), JSON.writeValueAsBytes(record));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
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
            } catch (CsiException e) {
                log.error("{}", e.getMessage());
            }
        }
        return records;
    }

    /** IDs with a metadata file, sorted; files that are not records of ours are ignored. */
    List<String> ids() {
        try (Stream<Path> files = Files.list(directory)) {
            List<String> ids = new ArrayList<>();
            files.map(p -> p.getFileName().toString())
                    .filter(n -> n.endsWith(SUFFIX))
                    .map(n -> n.substring(0, n.length() - SUFFIX.length()))
                    .sorted()
                    .forEach(ids::add);
            return ids;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + directory, e);
        }
    }

    static boolean isValidJson(Path path, Class<?> type) {
        try {
            JSON.readValue(Files.readAllBytes(path), type);
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
