package dev.blockpool.pool.records;

import dev.blockpool.common.Libc;
import dev.blockpool.common.StorageException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.Function;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records in one pool directory, one file per ID, in the {@link RecordFormat} and written with
 * {@link DurableFiles}.
 */
public final class RecordStore<T> {

    private static final Logger log = LoggerFactory.getLogger(RecordStore.class);

    public static final String SUFFIX = ".json";
    /** IDs looked at per pass over the listing at least, so that a filter that skips most costs few passes. */
    private static final int MIN_BATCH = 128;

    private final Path directory;
    private final RecordCodec<T> codec;

    public RecordStore(Path directory, RecordCodec<T> codec) {
        this.directory = directory;
        this.codec = codec;
    }

    Path path(String id) {
        return directory.resolve(id + SUFFIX);
    }

    public boolean exists(String id) {
        return Files.exists(path(id));
    }

    /** The record, or empty when it has no file; a file that cannot be read is an error. */
    public Optional<T> read(String id) {
        Path path = path(id);
        byte[] content;
        try {
            content = Files.readAllBytes(path);
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException e) {
            throw StorageException.io(e, "cannot read record %s", path);
        }
        return Optional.of(RecordFormat.decode(path, content, codec));
    }

    public void write(String id, T record) {
        prepare(id, record).publish();
    }

    /** The record written and flushed beside its file, in place once published; see {@link DurableFiles#prepare}. */
    public DurableFiles.Prepared prepare(String id, T record) {
        return DurableFiles.prepare(path(id), RecordFormat.encode(path(id), record, codec));
    }

    public boolean delete(String id) {
        return DurableFiles.delete(path(id));
    }

    /** Every readable record whose ID is {@code wanted} and that {@code filter} accepts, in ID order. */
    public List<T> all(Predicate<String> wanted, Predicate<T> filter) {
        List<String> ids = new ArrayList<>();
        for (DirectoryNames.Entry entry : names(0, Integer.MAX_VALUE).entries()) {
            String id = idOf(entry.name());
            if (wanted.test(id)) {
                ids.add(id);
            }
        }
        ids.sort(null);
        List<T> records = new ArrayList<>();
        for (String id : ids) {
            readListed(id).filter(filter).ifPresent(records::add);
        }
        return records;
    }

    /**
     * The readable records whose ID is {@code wanted} and that {@code filter} accepts, in the
     * directory's own order from position {@code from} (0: the start): at most {@code max} of
     * them, or all when {@code max} is 0. A page reads only the names from where the last one
     * stopped to where it fills (a directory position, see {@link DirectoryNames#read}), and a
     * record's file only on the way there, so a page costs its own entries, not the pool's. A
     * record that cannot be read is logged and left out, so one damaged file does not hide the
     * rest of the pool; one deleted since its name was read is simply gone.
     */
    public Page<T> page(Predicate<String> wanted, long from, int max, Predicate<T> filter) {
        return pageOf(wanted, from, max, id -> readListed(id).filter(filter));
    }

    /**
     * Like {@link #page}, but each wanted ID is handed to {@code load}, which reads what it
     * needs and says what the page shows of it, if anything.
     */
    public <R> Page<R> pageOf(Predicate<String> wanted, long from, int max, Function<String, Optional<R>> load) {
        List<R> entries = new ArrayList<>();
        long position = from;
        while (true) {
            // the names to fill the page and one more, to tell whether a page follows; more when a filter skips some
            int batch = max == 0 ? Integer.MAX_VALUE : Math.max(max - entries.size() + 1, MIN_BATCH);
            DirectoryNames.Read read = names(position, batch);
            for (DirectoryNames.Entry entry : read.entries()) {
                String id = idOf(entry.name());
                if (wanted.test(id)) {
                    if (max > 0 && entries.size() == max) {
                        return new Page<>(entries, OptionalLong.of(position));
                    }
                    load.apply(id).ifPresent(entries::add);
                }
                position = entry.resumeAt();
            }
            if (read.end()) {
                return new Page<>(entries, OptionalLong.empty());
            }
        }
    }

    private Optional<T> readListed(String id) {
        try {
            return read(id);
        } catch (StorageException e) {
            log.error("{}", e.getMessage());
            return Optional.empty();
        }
    }

    /** Up to {@code count} record file names from directory position {@code from}. */
    private DirectoryNames.Read names(long from, int count) {
        try {
            // getdents64 into one buffer: no Path, nor even a String, per file that is not wanted
            return DirectoryNames.read(directory.toString(), SUFFIX, from, count);
        } catch (Libc.ErrnoException e) {
            if (from != 0 && e.errno() == Libc.EINVAL) {
                return new DirectoryNames.Read(List.of(), true); // a position beyond any this directory gives: the end
            }
            throw StorageException.io(e, "cannot list the pool directory %s", directory);
        }
    }

    private static String idOf(String name) {
        return name.substring(0, name.length() - SUFFIX.length());
    }

    /** Why the record file cannot be read with {@code codec}, or empty when it can. */
    public static Optional<String> problem(Path path, RecordCodec<?> codec) {
        try {
            RecordFormat.decode(path, Files.readAllBytes(path), codec);
            return Optional.empty();
        } catch (IOException e) {
            return Optional.of(
                    StorageException.io(e, "cannot read record %s", path).getMessage());
        } catch (StorageException e) {
            return Optional.of(e.getMessage());
        }
    }
}
