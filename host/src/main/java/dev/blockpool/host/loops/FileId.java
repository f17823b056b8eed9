package dev.blockpool.host.loops;

import dev.blockpool.host.mounts.DeviceNumber;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Map;

/**
 * A file as the kernel knows it in every mount namespace: the device of its filesystem and its
 * inode. A loop device's backing file is compared with a pool image by this, never by the path
 * the kernel prints for it: that path is relative to the mount the file was opened through, so
 * after the node plugin's container is gone it no longer names the image.
 */
public record FileId(DeviceNumber device, long inode) {

    /** The file at {@code path}, a last symlink not followed (stat(2) through the JDK). */
    public static FileId of(Path path) throws IOException {
        Map<String, Object> attributes = Files.readAttributes(path, "unix:dev,ino", LinkOption.NOFOLLOW_LINKS);
        return new FileId(DeviceNumber.fromDevT((Long) attributes.get("dev")), (Long) attributes.get("ino"));
    }

    /** The device of the filesystem at {@code path}, a last symlink not followed. */
    static DeviceNumber deviceOf(Path path) throws IOException {
        return DeviceNumber.fromDevT((Long) Files.getAttribute(path, "unix:dev", LinkOption.NOFOLLOW_LINKS));
    }

    @Override
    public String toString() {
        return "[" + device + "]:" + inode;
    }
}
