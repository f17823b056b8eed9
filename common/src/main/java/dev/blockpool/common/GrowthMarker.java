package dev.blockpool.common;

import java.nio.file.Path;

/**
 * The mark of an ext4 growth under way while the filesystem is unmounted: an empty file beside
 * the volume's image, made before resize2fs starts and removed when it is done. resize2fs is not
 * crash-safe: killed mid-way (with the driver), it leaves the reserved resize inode and the
 * group counters half-updated, which e2fsck -p refuses to repair. A mark found at the next stage
 * says that is all that happened to the filesystem since its last full check, so it is repaired
 * without questions and grown again. A stale mark costs one full check. Beside the image, it
 * outlives the driver and goes with the image (a delete, or the reconcile once the image is gone).
 */
public final class GrowthMarker {

    /** Appended to the image's file name: {@code volumes/<id>.img.growing}. */
    public static final String SUFFIX = ".growing";

    private GrowthMarker() {}

    public static Path beside(Path image) {
        return image.resolveSibling(image.getFileName() + SUFFIX);
    }
}
