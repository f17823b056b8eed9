package dev.blockpool.pool;

/** What a new volume's data is copied from. */
public record ContentSource(Kind kind, String id) {

    public enum Kind {
        SNAPSHOT,
        VOLUME
    }

    public static ContentSource snapshot(String snapshotId) {
        return new ContentSource(Kind.SNAPSHOT, snapshotId);
    }

    public static ContentSource volume(String volumeId) {
        return new ContentSource(Kind.VOLUME, volumeId);
    }
}
