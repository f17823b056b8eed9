package dev.blockpool.pool;

/** How a volume is consumed: a filesystem mounted in the pod, or the raw block device. */
public enum AccessType {
    MOUNT,
    BLOCK
}
