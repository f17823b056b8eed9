package dev.blockpool.pool;

import dev.blockpool.common.StorageException;
import dev.blockpool.pool.records.DurableFiles;
import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Which volumes each node has attached, as one empty file per attachment,
 * {@code attachments/<node-id>/<volume-id>}, so that ControllerPublish counts a node's
 * attachments against its limit by listing one directory instead of reading every volume's
 * record. The volume records stay the truth. A marker is made, durably, before the record says
 * attached, and removed after it says detached: a crash in between leaves a marker too many
 * (which a count at the limit checks against the records) and never one too few. A volume whose
 * record cannot be read keeps its marker, so it still counts. {@link #rebuild} makes the index
 * match the records; a pool without a complete index (made by an earlier driver) is indexed by
 * the first count. Every method runs under the pool's {@link RecordLock}.
 */
final class AttachmentIndex {

    static final String DIRECTORY = "attachments";
    /** Written last by {@link #rebuild}: from then on every attachment has its marker. */
    private static final String COMPLETE = ".complete";

    private final Path root;

    AttachmentIndex(Path poolRoot) {
        this.root = poolRoot.resolve(DIRECTORY);
    }

    /** The volumes with a marker on the node; empty when the pool has no complete index yet. */
    Optional<Set<String>> markedOn(String nodeId) {
        if (!Files.exists(root.resolve(COMPLETE))) {
            return Optional.empty();
        }
        return Optional.of(markers(root.resolve(nodeId)));
    }

    void add(String nodeId, String volumeId) {
        Path node = marker(nodeId, volumeId).getParent();
        try {
            if (!Files.isDirectory(node)) {
                Files.createDirectories(node);
                DurableFiles.syncDirectory(root);
            }
            Files.createFile(marker(nodeId, volumeId));
            DurableFiles.syncDirectory(node);
        } catch (FileAlreadyExistsException alreadyMarked) {
            // an attach that stopped after its marker, retried
        } catch (IOException e) {
            throw StorageException.io(e, "cannot record the attachment of %s to node %s in %s", volumeId, nodeId, root);
        }
    }

    void remove(String nodeId, String volumeId) {
        if (Ids.isNodeId(nodeId) && Ids.isVolumeId(volumeId)) { // any other name is no marker of the index
            DurableFiles.delete(marker(nodeId, volumeId));
        }
    }

    /** The marker's path: only for IDs that can name nothing outside the index. */
    private Path marker(String nodeId, String volumeId) {
        if (!Ids.isNodeId(nodeId) || !Ids.isVolumeId(volumeId)) {
            throw StorageException.invalid("no attachment of %s to node %s can be recorded", volumeId, nodeId);
        }
        return root.resolve(nodeId).resolve(volumeId);
    }

    /** Makes the markers say exactly which nodes {@code volumes} are attached to, then marks the index complete. */
    void rebuild(List<Volume> volumes) {
        Map<String, Set<String>> wanted = new HashMap<>();
        for (Volume volume : volumes) {
            volume.attachments()
                    .forEach(a -> wanted.computeIfAbsent(a.nodeId(), n -> new HashSet<>())
                            .add(volume.id()));
        }
        wanted.forEach((node, ids) -> ids.forEach(id -> add(node, id)));
        for (Path node : nodeDirectories()) {
            Set<String> kept = wanted.getOrDefault(node.getFileName().toString(), Set.of());
            markers(node).stream()
                    .filter(id -> !kept.contains(id))
                    .forEach(id -> remove(node.getFileName().toString(), id));
        }
        try {
            Files.createDirectories(root);
            if (!Files.exists(root.resolve(COMPLETE))) {
                Files.createFile(root.resolve(COMPLETE));
                DurableFiles.syncDirectory(root);
            }
        } catch (IOException e) {
            throw StorageException.io(e, "cannot complete the attachment index %s", root);
        }
    }

    private List<Path> nodeDirectories() {
        try (Stream<Path> entries = Files.list(root)) {
            return entries.filter(p -> Ids.isNodeId(p.getFileName().toString()) && Files.isDirectory(p))
                    .toList();
        } catch (NoSuchFileException e) {
            return List.of();
        } catch (IOException e) {
            throw StorageException.io(e, "cannot list %s", root);
        }
    }

    private static Set<String> markers(Path node) {
        try (Stream<Path> files = Files.list(node)) {
            return files.map(p -> p.getFileName().toString())
                    .filter(Ids::isVolumeId)
                    .collect(Collectors.toSet());
        } catch (NoSuchFileException e) {
            return Set.of();
        } catch (IOException e) {
            throw StorageException.io(e, "cannot list %s", node);
        }
    }
}
