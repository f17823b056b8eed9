package dev.blockpool.pool;

import dev.blockpool.common.StorageException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Predicate;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records in one pool directory, one file per ID, in the {@link RecordFormat} and written with
 * {@link DurableFiles}.
 */
final class MetadataStore<T> {

    private static final Logger log = LoggerFactory.getLogger(MetadataStore.class);

    static final String SUFFIX = ".json";

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
        return Optional.of(RecordFormat.decode(path, content, type));
    }

    void write(String id, T record) {
        DurableFiles.write(path(id), RecordFormat.encode(path(id), record));
    }

    boolean delete(String id) {
        return DurableFiles.delete(path(id));
    }

    /**
     * Every readable record whose ID is {@code wanted}, sorted by ID. A record that cannot be
     * read is logged and left out, so one damaged file does not hide the rest of the pool.
     */
    List<T> readAll(Predicate<String> wanted) {
        List<T> records = new ArrayList<>();
        for (String id : ids()) {
            if (!wanted.test(id)) {
                continue;
            }
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
        } catch (UncheckedIOException e) {
            throw StorageException.io(e.getCause(), "cannot list the pool directory %s", directory);
        }
    }

    /** Why the metadata file cannot be read as a {@code type}, or empty when it can. */
    static Optional<String> problem(Path path, Class<?> type) {
        try {
            RecordFormat.decode(path, Files.readAllBytes(path), type);
            return Optional.empty();
        } catch (IOException e) {
            return Optional.of(StorageException.io(e, "cannot read metadata %s", path).getMessage());
        } catch (StorageException e) {
            return Optional.of(e.getMessage());
        }
    }
}
