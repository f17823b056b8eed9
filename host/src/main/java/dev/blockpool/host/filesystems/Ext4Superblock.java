package dev.blockpool.host.filesystems;

import dev.blockpool.common.StorageException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The size an ext4 filesystem has, from its superblock ({@code blocks} of {@code blockSize} bytes): how the stage tells that a volume grew
 * while its filesystem could not (online growth refused), without running a program.
 */
record Ext4Superblock(long blocks, int blockSize) {

    /** The superblock starts 1024 bytes into the device and is 1024 bytes long. */
    static final int OFFSET = 1024;

    static final int LENGTH = 1024;

    private static final int BLOCKS_COUNT_LO = 0x04;
    private static final int LOG_BLOCK_SIZE = 0x18;
    private static final int MAGIC = 0x38;
    private static final int FEATURE_INCOMPAT = 0x60;
    private static final int BLOCKS_COUNT_HI = 0x150;
    private static final short EXT4_MAGIC = (short) 0xEF53;
    private static final int INCOMPAT_64BIT = 0x80;

    /** The filesystem's size in bytes. */
    long sizeBytes() {
        return blocks * blockSize;
    }

    /** Whether the filesystem would grow on a device of that many bytes: one more block fits. */
    boolean smallerThan(long deviceBytes) {
        return deviceBytes / blockSize > blocks;
    }

    /** Parses the superblock's 1024 bytes. */
    static Ext4Superblock parse(ByteBuffer superblock) {
        ByteBuffer sb = superblock.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        if (sb.remaining() < LENGTH || sb.getShort(sb.position() + MAGIC) != EXT4_MAGIC) {
            throw StorageException.internal("no ext4 superblock where one was probed");
        }
        int base = sb.position();
        long blocks = Integer.toUnsignedLong(sb.getInt(base + BLOCKS_COUNT_LO));
        if ((sb.getInt(base + FEATURE_INCOMPAT) & INCOMPAT_64BIT) != 0) {
            blocks |= Integer.toUnsignedLong(sb.getInt(base + BLOCKS_COUNT_HI)) << 32;
        }
        int log = sb.getInt(base + LOG_BLOCK_SIZE);
        if (log < 0 || log > 6) { // 1 KiB to 64 KiB
            throw StorageException.internal("an ext4 superblock with a block size of 2^(10+%d) bytes", log);
        }
        return new Ext4Superblock(blocks, 1 << (10 + log));
    }

    /** The superblock of the ext4 filesystem on an unmounted device. */
    static Ext4Superblock read(Path device) {
        try (FileChannel channel = FileChannel.open(device, StandardOpenOption.READ)) {
            ByteBuffer sb = ByteBuffer.allocate(LENGTH);
            while (sb.hasRemaining() && channel.read(sb, OFFSET + sb.position()) >= 0) {
                // read the whole superblock
            }
            if (sb.hasRemaining()) {
                throw StorageException.internal("%s ends inside its ext4 superblock", device);
            }
            return parse(sb.flip());
        } catch (IOException e) {
            throw StorageException.io(e, "cannot read the ext4 superblock of %s", device);
        }
    }
}
