/**
 * Images that cross from one node's pool to another's. The source side ({@link
 * dev.blockpool.pool.transfer.ImageExports}) serves a snapshot's image, or a frozen copy of a
 * volume's, as its allocated ranges and checksummed chunks; the destination side ({@link
 * dev.blockpool.pool.transfer.ImageImports}) pulls one from a {@link
 * dev.blockpool.pool.transfer.RemoteImage} into the pool, resuming where a dropped connection or a
 * restart left it, and hands the finished image to the pool's domain. It knows nothing of the
 * network: the peer module carries these calls between nodes.
 */
package dev.blockpool.pool.transfer;
