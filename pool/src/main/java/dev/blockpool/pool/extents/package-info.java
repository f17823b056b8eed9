/**
 * What the pool's filesystem knows of an image's layout, for changed block tracking and the
 * census: where an image holds data (SEEK_DATA, SEEK_HOLE), which physical extents hold it
 * (FIEMAP), and from these the ranges in which one image differs from another, found a bounded
 * step at a time. It knows files and ranges, never volumes or snapshots: the pool names the
 * images. Entry points: {@link dev.blockpool.pool.extents.SnapshotRanges} (a stream of ranges)
 * and {@link dev.blockpool.pool.extents.ImageExtents} (one image's extents).
 */
package dev.blockpool.pool.extents;
