package dev.blockpool.pool;

import dev.blockpool.common.StorageException;
import java.io.IOException;
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
     * The readable records whose ID is {@code wanted} and sorts after {@code after}, and that
     * {@code filter} accepts, in ID order: at most {@code max} of them, or all when {@code max} is
     * 0. Only the directory's names are listed in full; a record's file is read only on the way
     * to the page's end, so a page costs its own entries, not the pool's. A record that cannot be
     * read is logged and left out, so one damaged file does not hide the rest of the pool; one
     * deleted since the names were listed is simply gone.
     */
    Page<T> page(Predicate<String> wanted, Optional<String> after, int max, Predicate<T> filter) {
        List<String> ids = ids(wanted, after);
        List<T> entries = new ArrayList<>();
        for (int i = 0; i < ids.size(); i++) {
            readListed(ids.get(i)).filter(filter).ifPresent(entries::add);
            if (max > 0 && entries.size() == max && i + 1 < ids.size()) {
                return new Page<>(entries, Optional.of(ids.get(i)));
            }
        }
        return new Page<>(entries, Optional.empty());
    }

    private Optional<T> readListed(String id) {
        try {
            return read(id);
        } catch (StorageException e) {
            log.error("{}", e.getMessage());
            return Optional.empty();
        }
    }

    /** The IDs with a metadata file, {@code wanted} and after {@code after}, sorted. */
    private List<String> ids(Predicate<String> wanted, Optional<String> after) {
        // File.list gives bare names: no Path per entry of a directory that holds every volume twice
        String[] names = directory.toFile().list();
        if (names == null) {
            throw listingFailure();
        }
        List<String> ids = new ArrayList<>();
        for (String name : names) {
            if (name.endsWith(SUFFIX)) {
                String id = name.substring(0, name.length() - SUFFIX.length());
                if ((after.isEmpty() || id.compareTo(after.get()) > 0) && wanted.test(id)) {
                    ids.add(id);
                }
            }
        }
        ids.sort(null);
        return ids;
    }

    /** File.list says only that it failed; Files.list says why. */
    private StorageException listingFailure() {
        try (Stream<Path> files = Files.list(directory)) {
            return StorageException.internal("cannot list the pool directory %s", directory);
        } catch (IOException e) {
            return StorageException.io(e, "cannot list the pool directory %s", directory);
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
