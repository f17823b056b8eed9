package dev.blockpool.pool;

/**
 * A durable ControllerPublish record: the volume is usable by {@code nodeId}. {@code multiNode}
 * records whether it was published with an access mode that lets other nodes attach it too.
 */
public record Attachment(String nodeId, boolean readonly, boolean multiNode) {}
