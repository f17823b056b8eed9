package dev.blockpool.pool.extents;

/** A range of bytes of an image: {@code length} bytes from {@code offset}, never empty. */
public record ByteRange(long offset, long length) {

    public ByteRange {
        if (offset < 0 || length <= 0) {
            throw new IllegalArgumentException("not a byte range: offset " + offset + ", length " + length);
        }
    }

    /** The range from {@code start} up to (not including) {@code end}. */
    public static ByteRange between(long start, long end) {
        return new ByteRange(start, end - start);
    }

    /** The offset just past the range's last byte. */
    public long end() {
        return offset + length;
    }
}
