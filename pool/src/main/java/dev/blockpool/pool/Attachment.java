package dev.blockpool.pool;

/**
 * A durable ControllerPublish record: the volume is usable by {@code nodeId}, read-write or
 * read-only, with an access mode that keeps other nodes out or lets them attach it too.
 */
public record Attachment(String nodeId, Access access, Sharing sharing) {

    /** How the volume is published to the node. */
    public enum Access {
        READ_WRITE,
        READ_ONLY
    }

    /** Whether the access mode it was published with lets other nodes attach the volume too. */
    public enum Sharing {
        SINGLE_NODE,
        MULTI_NODE
    }

    public boolean readonly() {
        return access == Access.READ_ONLY;
    }

    public boolean multiNode() {
        return sharing == Sharing.MULTI_NODE;
    }
}
