package dev.blockpool.pool.transfer;

import dev.blockpool.common.StorageException;
import dev.blockpool.pool.ContentSource;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Map;

/**
 * Names an image's bytes as a file holds them: a digest of what it is (kind and ID) and of the
 * file's inode, change time and size. A write, a truncate, or another file put in its place
 * changes one of those, so a pull never takes bytes of one image for another's.
 */
final class ImageIdentity {

    private ImageIdentity() {}

    static String of(ContentSource source, Path image) {
        Map<String, Object> file;
        try {
            file = Files.readAttributes(image, "unix:ino,ctime,size", LinkOption.NOFOLLOW_LINKS);
        } catch (IOException e) {
            throw StorageException.io(e, "cannot read the identity of %s", image);
        }
        FileTime changed = (FileTime) file.get("ctime");
        String named = String.join(
                "/",
                source.kind().name(),
                source.id(),
                file.get("ino").toString(),
                changed.toInstant().toString(),
                file.get("size").toString());
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(named.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest, 0, 16);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every Java runtime", e);
        }
    }
}
