package dev.blockpool.pool.transfer;

/**
 * Bytes of an image at an offset, with the CRC-32C the source computed over them: the destination
 * writes a chunk only once the checksum of what arrived matches.
 */
public record Chunk(long offset, byte[] data, int crc32c) {}
