package dev.blockpool.systemtest;

import dev.blockpool.systemtest.CallerModel.Kind;
import dev.blockpool.systemtest.CallerModel.Payload;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * What a pod does with a published volume: writes data and fsyncs it (a file in a filesystem
 * volume, a range of a block volume's device), and reads it back. Only ever opens paths below
 * the test's kubelet directory that the caller believes the driver published.
 */
final class PodData {

    private PodData() {}

    /** Writes {@code bytes} as the file {@code name} in the mounted directory, fsyncs it and the directory. */
    static Payload writeFile(Path mountedDir, String name, byte[] bytes) throws IOException {
        Path file = mountedDir.resolve(name);
        try (FileChannel channel = FileChannel.open(
                file,
                StandardOpenOption.CREATE,
                StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING,
                LinkOption.NOFOLLOW_LINKS)) {
            writeFully(channel, bytes, 0);
            channel.force(true);
        }
        // The name must survive as well as the bytes.
        try (FileChannel directory = FileChannel.open(mountedDir, StandardOpenOption.READ)) {
            directory.force(true);
        }
        return new Payload(0, bytes.length, sha256(bytes));
    }

    /** Writes {@code bytes} at {@code offset} of the device bound at {@code deviceFile}, and fsyncs the device. */
    static Payload writeDevice(Path deviceFile, long offset, byte[] bytes) throws IOException {
        // No CREATE: the device node must already be bound there.
        try (FileChannel channel = FileChannel.open(deviceFile, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS)) {
            writeFully(channel, bytes, offset);
            channel.force(true);
        }
        return new Payload(offset, bytes.length, sha256(bytes));
    }

    /** Every payload that reads back differently through {@code target}, described; empty when all match. */
    static List<String> verify(Path target, Kind kind, Map<String, Payload> data) {
        List<String> wrong = new ArrayList<>();
        data.forEach((key, payload) -> {
            Path file = kind == Kind.EXT4 ? target.resolve(key) : target;
            try {
                byte[] read = read(file, payload.offset(), payload.length());
                String hash = sha256(read);
                if (!hash.equals(payload.sha256())) {
                    wrong.add("%s: %d bytes at %d read back with SHA-256 %s, %s was fsync'd"
                            .formatted(
                                    key,
                                    payload.length(),
                                    payload.offset(),
                                    hash.substring(0, 12),
                                    payload.sha256().substring(0, 12)));
                }
            } catch (IOException e) {
                wrong.add("%s: cannot be read: %s".formatted(key, e));
            }
        });
        return wrong;
    }

    /** A file is read whole (a shorter or longer file is wrong too); a device only where the payload was written. */
    private static byte[] read(Path file, long offset, int length) throws IOException {
        if (Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
            return Files.readAllBytes(file);
        }
        ByteBuffer buffer = ByteBuffer.allocate(length);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
            while (buffer.hasRemaining() && channel.read(buffer, offset + buffer.position()) >= 0) {
                // until the payload's length, or the end of the device
            }
        }
        return Arrays.copyOf(buffer.array(), buffer.position());
    }

    private static void writeFully(FileChannel channel, byte[] bytes, long offset) throws IOException {
        ByteBuffer buffer = ByteBuffer.wrap(bytes);
        while (buffer.hasRemaining()) {
            channel.write(buffer, offset + buffer.position());
        }
    }

    static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every Java runtime", e);
        }
    }
}
