/**
 * Filesystems on a volume's device: probing, formatting and mounting safely, checking and
 * growing them with their tools, their stats, and freezing or checkpointing a mounted one
 * through its mount point. Uses the loops and mounts rooms.
 */
package dev.blockpool.host.filesystems;
