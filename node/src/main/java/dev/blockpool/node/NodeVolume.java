package dev.blockpool.node;

import java.nio.file.Path;
import java.util.Optional;

/**
 * What the node needs to know about a volume in the pool.
 *
 * @param fsType      the filesystem the volume was created for, if any ("ext4" or "xfs")
 * @param mountable   the volume may be consumed as a filesystem
 * @param blockable   the volume may be consumed as a raw block device
 * @param ephemeral   created by NodePublish for a CSI inline volume, deleted by NodeUnpublish
 */
public record NodeVolume(
        String id, Path image, Optional<String> fsType, boolean mountable, boolean blockable, boolean ephemeral) {}
