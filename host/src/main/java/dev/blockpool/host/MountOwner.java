package dev.blockpool.host;

/** Whose is a mount, seen from one volume: this volume's, something else's, or a vanished device's. */
enum MountOwner {
    THIS_VOLUME,
    OTHER,
    BROKEN
}
