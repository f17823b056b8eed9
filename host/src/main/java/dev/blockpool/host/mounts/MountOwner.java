package dev.blockpool.host.mounts;

/** Whose is a mount, seen from one volume: this volume's, something else's, or a vanished device's. */
public enum MountOwner {
    THIS_VOLUME,
    OTHER,
    BROKEN
}
