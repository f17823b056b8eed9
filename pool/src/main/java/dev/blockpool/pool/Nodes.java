package dev.blockpool.pool;

import dev.blockpool.pool.records.RecordStore;
import java.nio.file.Path;
import java.util.Optional;

/** Nodes register themselves here when their node service starts; ControllerPublish reads it. */
public final class Nodes {

    private final RecordStore<NodeRecord> store;

    Nodes(Path directory) {
        this.store = new RecordStore<>(directory, RecordCodecs.NODE);
    }

    public void register(NodeRecord node) {
        Ids.requireNodeId(node.nodeId());
        if (!store.read(node.nodeId()).equals(Optional.of(node))) {
            store.write(node.nodeId(), node);
        }
    }

    public Optional<NodeRecord> find(String nodeId) {
        return Ids.isNodeId(nodeId) ? store.read(nodeId) : Optional.empty();
    }
}
