package dev.blockpool.pool.transfer;

/**
 * An image in another node's pool, opened there for one transfer: what a pull reads. The peer
 * module implements it over the network; every call may fail with a {@code StorageException}
 * (UNAVAILABLE when the peer cannot be reached: the pull resumes later from what it holds).
 */
public interface RemoteImage extends ImageReader {

    /** The ID of the node whose pool holds the image. */
    String node();
}
