package dev.blockpool.pool;

/**
 * A durable ControllerPublish record: the volume is usable by {@code nodeId}. {@code multiNode}
 * records whether it was published with an access mode that lets other nodes attach it too; a
 * record without it (written before the field existed) reads as single-node, the safe side.
 */
public record Attachment(String nodeId, boolean readonly, boolean multiNode) {
}
