package dev.blockpool.pool;

import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.PriorityQueue;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records in one pool directory, one file per ID, in the {@link RecordFormat} and written with
 * {@link DurableFiles}.
 */
final class MetadataStore<T> {

    private static final Logger log = LoggerFactory.getLogger(MetadataStore.class);

    static final String SUFFIX = ".json";
    /** IDs looked at per pass over the listing at least, so that a filter that skips most costs few passes. */
    private static final int MIN_BATCH = 128;

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
        List<String> ids = ids(wanted);
        List<T> entries = new ArrayList<>();
        Optional<String> cursor = after;
        while (true) {
            // enough IDs to fill the page and see whether one is left after it; more when a filter skips some
            int batch = max == 0 ? Integer.MAX_VALUE : Math.max(max - entries.size() + 1, MIN_BATCH);
            List<String> next = firstAfter(ids, cursor, batch);
            for (String id : next) {
                if (max > 0 && entries.size() == max) {
                    return new Page<>(entries, cursor);
                }
                cursor = Optional.of(id);
                readListed(id).filter(filter).ifPresent(entries::add);
            }
            if (next.size() < batch) {
                return new Page<>(entries, Optional.empty());
            }
        }
    }

    /**
     * The first {@code count} of {@code ids} that sort after {@code cursor}, sorted. A page needs
     * a hundred of thousands: a heap of the smallest seen so far costs one comparison for most
     * IDs, where sorting them all costs a dozen each.
     */
    private static List<String> firstAfter(List<String> ids, Optional<String> cursor, int count) {
        PriorityQueue<String> largestFirst = new PriorityQueue<>(Comparator.reverseOrder());
        for (String id : ids) {
            if (cursor.isPresent() && id.compareTo(cursor.get()) <= 0) {
                continue;
            }
            if (largestFirst.size() < count) {
                largestFirst.add(id);
            } else if (id.compareTo(largestFirst.peek()) < 0) {
                largestFirst.poll();
                largestFirst.add(id);
            }
        }
        List<String> first = new ArrayList<>(largestFirst);
        first.sort(null);
        return first;
    }

    private Optional<T> readListed(String id) {
        try {
            return read(id);
        } catch (StorageException e) {
            log.error("{}", e.getMessage());
            return Optional.empty();
        }
    }

    /** The IDs with a metadata file that are {@code wanted}, in no particular order. */
    private List<String> ids(Predicate<String> wanted) {
        List<String> names;
        try {
            // one getdents64 pass: no Path, nor even a String, per file of a directory of thousands
            names = Libc.directoryNames(directory.toString(), SUFFIX);
        } catch (Libc.ErrnoException e) {
            throw StorageException.io(e, "cannot list the pool directory %s", directory);
        }
        List<String> ids = new ArrayList<>(names.size());
        for (String name : names) {
            String id = name.substring(0, name.length() - SUFFIX.length());
            if (wanted.test(id)) {
                ids.add(id);
            }
        }
        return ids;
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
