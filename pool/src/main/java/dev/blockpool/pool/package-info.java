/**
 * The pool's own domain: what its records say and how they change together. Volumes, snapshots
 * and group snapshots with their images ({@link dev.blockpool.pool.ImageRecords}, the commit
 * order they share), attachments and nodes, the claims of the processes sharing the pool, what the
 * pool promises ({@link dev.blockpool.pool.PoolCapacity}), its health, census and reconcile. It
 * stores its records through {@code pool.records} and reads images' extents through
 * {@code pool.extents}; {@code pool.transfer}, the images that cross between nodes, is built on
 * it. Entry point: {@link dev.blockpool.pool.Pool}.
 */
package dev.blockpool.pool;
