package dev.blockpool.pool;

/** A durable ControllerPublish record: the volume is usable by {@code nodeId}. */
public record Attachment(String nodeId, boolean readonly) {
}
