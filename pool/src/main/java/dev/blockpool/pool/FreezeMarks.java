package dev.blockpool.pool;

import dev.blockpool.common.StorageException;
import dev.blockpool.pool.records.DurableFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The volumes whose file systems a group snapshot is freezing: an empty file each in
 * {@code frozen/}, written before the freeze and removed after the thaw. A file system stays
 * frozen when the process that froze it dies, and nothing in the kernel's tables shows it: a
 * driver that starts finds here what a predecessor may have left frozen, and thaws it.
 */
public final class FreezeMarks {

    private final Path directory;

    FreezeMarks(Path directory) {
        this.directory = directory;
    }

    /** Durably, before the volume's file system is frozen. */
    public void mark(String volumeId) {
        DurableFiles.write(markOf(volumeId), new byte[0]);
    }

    /** Once the volume's file system is thawed; a mark already gone is fine. */
    public void clear(String volumeId) {
        DurableFiles.delete(markOf(volumeId));
    }

    /** The volumes marked, in no particular order. */
    public List<String> marked() {
        try (Stream<Path> files = Files.list(directory)) {
            return files.map(f -> f.getFileName().toString())
                    .filter(Ids::isVolumeId)
                    .toList();
        } catch (IOException e) {
            throw StorageException.io(e, "cannot list %s", directory);
        }
    }

    /** The volumes marked, each with when its mark was written: since when it may be frozen. */
    public Map<String, Instant> markedSince() {
        Map<String, Instant> since = new LinkedHashMap<>();
        for (String volumeId : marked()) {
            Path mark = directory.resolve(volumeId);
            try {
                since.put(volumeId, Files.getLastModifiedTime(mark).toInstant());
            } catch (NoSuchFileException e) {
                // cleared meanwhile
            } catch (IOException e) {
                throw StorageException.io(e, "cannot look at %s", mark);
            }
        }
        return since;
    }

    /** The file of the volume's mark: where an operator removes it by hand. */
    public Path markOf(String volumeId) {
        return directory.resolve(requireVolumeId(volumeId));
    }

    /** Whether the volume is marked: a mark removed by hand says its file system is thawed. */
    public boolean isMarked(String volumeId) {
        return Files.exists(markOf(volumeId));
    }

    private static String requireVolumeId(String volumeId) {
        if (!Ids.isVolumeId(volumeId)) {
            throw StorageException.invalid("%s is not a volume ID", volumeId);
        }
        return volumeId;
    }
}
