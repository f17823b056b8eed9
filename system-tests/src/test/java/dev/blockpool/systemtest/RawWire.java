package dev.blockpool.systemtest;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * Hostile bytes below the level of a well-formed request: mutated protobuf payloads (sent by
 * the fuzz loop through a byte-array method), and whole connections on the driver's Unix
 * socket carrying garbage, HTTP/1 text, or an HTTP/2 exchange that stops half-way.
 */
final class RawWire {

    private static final byte[] PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
    private static final List<String> HTTP1 = List.of(
            "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
            "POST /csi.v1.Node/NodeStageVolume HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/grpc\r\n"
                    + "Content-Length: 5\r\n\r\n\0\0\0\0\0",
            "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
                    + "HTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n",
            "OPTIONS * HTTP/1.0\r\n\r\n",
            "CONNECT localhost:1 HTTP/1.1\r\n\r\n",
            "GET /" + "a".repeat(70_000) + " HTTP/1.1\r\n\r\n",
            "\r\n\r\n\r\n");

    /** How one connection was abused, for the report's tally. */
    enum Attack {
        GARBAGE,
        HTTP1,
        PARTIAL_PREFACE,
        PARTIAL_HEADERS,
        PARTIAL_DATA,
        DROPPED_AFTER_REQUEST,
        MUTATED_FRAMES,
        RAPID_RESET
    }

    private final Random random;

    RawWire(Random random) {
        this.random = random;
    }

    /** A protobuf payload broken in one of the ways a parser must survive; {@code valid} is a well-formed request. */
    byte[] mutate(byte[] valid, StringBuilder how) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        switch (random.nextInt(11)) {
            case 0 -> {
                byte[] flipped = valid.length == 0 ? new byte[] {0} : valid.clone();
                int flips = 1 + random.nextInt(4);
                for (int i = 0; i < flips; i++) {
                    flipped[random.nextInt(flipped.length)] ^= (byte) (1 << random.nextInt(8));
                }
                how.append(flips).append(" bit(s) flipped");
                return flipped;
            }
            case 1 -> {
                int length = valid.length == 0 ? 0 : random.nextInt(valid.length);
                how.append("truncated to ")
                        .append(length)
                        .append(" of ")
                        .append(valid.length)
                        .append(" bytes");
                return Arrays.copyOf(valid, length);
            }
            case 2 -> {
                byte[] garbage = new byte[1 + random.nextInt(256)];
                random.nextBytes(garbage);
                how.append(garbage.length).append(" random bytes");
                return garbage;
            }
            case 3 -> {
                out.writeBytes(valid);
                out.write(0x0a); // field 1, length-delimited: invalid UTF-8 in a string field
                out.write(4);
                out.writeBytes(new byte[] {(byte) 0xc3, 0x28, (byte) 0xff, (byte) 0xfe});
                how.append("field 1 as invalid UTF-8");
            }
            case 4 -> {
                out.writeBytes(valid);
                out.write(0x0a); // field 1 claims 2 GiB that never come
                out.writeBytes(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x07, 'x'});
                how.append("a length beyond the message");
            }
            case 5 -> {
                for (int i = 0; i < 200; i++) {
                    out.write(0x7b); // field 15, start group: nested beyond the parser's recursion limit
                }
                for (int i = 0; i < 200; i++) {
                    out.write(0x7c);
                }
                how.append("200 nested groups");
            }
            case 6 -> {
                out.write(0x00); // tag 0 is never valid
                out.write(0x01);
                out.writeBytes(valid);
                how.append("a zero tag");
            }
            case 7 -> {
                out.writeBytes(valid);
                out.write(0x08); // field 1 as a varint of 11 bytes
                for (int i = 0; i < 10; i++) {
                    out.write(0xff);
                }
                out.write(0x01);
                how.append("an overlong varint");
            }
            case 8 -> {
                out.writeBytes(valid);
                out.writeBytes(valid);
                how.append("the message twice");
            }
            case 9 -> {
                out.writeBytes(valid);
                out.write(0xfa); // field 2047, length-delimited, a large unknown field
                out.write(0x7f);
                byte[] big = new byte[100_000];
                random.nextBytes(big);
                writeVarint(out, big.length);
                out.writeBytes(big);
                how.append("a 100 kB unknown field");
            }
            default -> {
                out.writeBytes(valid);
                out.write(0x0f); // field 1, wire type 7: no such wire type
                how.append("wire type 7");
            }
        }
        return out.toByteArray();
    }

    /**
     * One connection to the socket, abused as {@code attack}; {@code readOnlyRequest} is a full
     * gRPC method path and payload of a request that changes nothing (only those are sent
     * whole, so a call the test never hears the end of cannot leave state behind).
     */
    void attack(Path socket, Attack attack, String readOnlyMethod, byte[] readOnlyRequest) throws IOException {
        try (SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            channel.connect(UnixDomainSocketAddress.of(socket));
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            boolean read = false;
            switch (attack) {
                case GARBAGE -> {
                    byte[] garbage = new byte[1 + random.nextInt(2048)];
                    random.nextBytes(garbage);
                    out.writeBytes(garbage);
                    read = true;
                }
                case HTTP1 -> {
                    out.writeBytes(HTTP1.get(random.nextInt(HTTP1.size())).getBytes(StandardCharsets.ISO_8859_1));
                    read = true;
                }
                case PARTIAL_PREFACE -> out.write(PREFACE, 0, 1 + random.nextInt(PREFACE.length - 1));
                case PARTIAL_HEADERS -> {
                    out.writeBytes(PREFACE);
                    out.writeBytes(frame(4, 0, 0, new byte[0]));
                    byte[] headers = frame(1, 0x4, 1, headers(readOnlyMethod));
                    out.write(headers, 0, 1 + random.nextInt(headers.length - 1));
                }
                case PARTIAL_DATA -> {
                    out.writeBytes(PREFACE);
                    out.writeBytes(frame(4, 0, 0, new byte[0]));
                    out.writeBytes(frame(1, 0x4, 1, headers(readOnlyMethod)));
                    byte[] data = frame(0, 0x1, 1, grpcMessage(readOnlyRequest));
                    out.write(data, 0, 1 + random.nextInt(data.length - 1));
                }
                case DROPPED_AFTER_REQUEST -> {
                    out.writeBytes(PREFACE);
                    out.writeBytes(frame(4, 0, 0, new byte[0]));
                    out.writeBytes(frame(1, 0x4, 1, headers(readOnlyMethod)));
                    out.writeBytes(frame(0, 0x1, 1, grpcMessage(readOnlyRequest)));
                }
                case MUTATED_FRAMES -> {
                    out.writeBytes(PREFACE);
                    ByteArrayOutputStream frames = new ByteArrayOutputStream();
                    frames.writeBytes(frame(4, 0, 0, new byte[0]));
                    frames.writeBytes(frame(1, 0x4, 1, headers(readOnlyMethod)));
                    frames.writeBytes(frame(0, 0x1, 1, grpcMessage(readOnlyRequest)));
                    byte[] bytes = frames.toByteArray();
                    for (int i = 0, flips = 1 + random.nextInt(6); i < flips; i++) {
                        bytes[random.nextInt(bytes.length)] ^= (byte) (1 << random.nextInt(8));
                    }
                    out.writeBytes(bytes);
                    read = true;
                }
                case RAPID_RESET -> {
                    out.writeBytes(PREFACE);
                    out.writeBytes(frame(4, 0, 0, new byte[0]));
                    for (int stream = 1; stream < 400; stream += 2) {
                        out.writeBytes(frame(1, 0x4, stream, headers(readOnlyMethod)));
                        out.writeBytes(frame(3, 0, stream, new byte[] {0, 0, 0, 8})); // RST_STREAM CANCEL
                    }
                    read = true;
                }
            }
            try {
                channel.write(ByteBuffer.wrap(out.toByteArray()));
                if (read) {
                    drain(channel, 100);
                }
            } catch (IOException closedByTheDriver) {
                // the driver may hang up on garbage before it has all of it: that is a fine answer
            }
        }
    }

    /** Reads what the driver answers until it hangs up or {@code millis} pass. */
    private static void drain(SocketChannel channel, long millis) throws IOException {
        channel.configureBlocking(false);
        try (Selector selector = Selector.open()) {
            channel.register(selector, SelectionKey.OP_READ);
            ByteBuffer buffer = ByteBuffer.allocate(16 * 1024);
            long deadline = System.nanoTime() + millis * 1_000_000;
            while (true) {
                long left = (deadline - System.nanoTime()) / 1_000_000;
                if (left <= 0 || selector.select(left) == 0) {
                    return;
                }
                selector.selectedKeys().clear();
                buffer.clear();
                if (channel.read(buffer) < 0) {
                    return;
                }
            }
        }
    }

    private static byte[] frame(int type, int flags, int stream, byte[] payload) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(payload.length >>> 16);
        out.write(payload.length >>> 8);
        out.write(payload.length);
        out.write(type);
        out.write(flags);
        out.write(stream >>> 24);
        out.write(stream >>> 16);
        out.write(stream >>> 8);
        out.write(stream);
        out.writeBytes(payload);
        return out.toByteArray();
    }

    /** The request headers in HPACK, every field a literal without indexing and without Huffman coding. */
    private static byte[] headers(String method) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        String[][] fields = {
            {":method", "POST"},
            {":scheme", "http"},
            {":path", "/" + method},
            {":authority", "localhost"},
            {"content-type", "application/grpc"},
            {"te", "trailers"}
        };
        for (String[] field : fields) {
            out.write(0);
            literal(out, field[0]);
            literal(out, field[1]);
        }
        return out.toByteArray();
    }

    private static void literal(ByteArrayOutputStream out, String text) {
        byte[] bytes = text.getBytes(StandardCharsets.US_ASCII);
        int length = bytes.length;
        if (length < 127) {
            out.write(length);
        } else {
            out.write(127);
            length -= 127;
            while (length >= 128) {
                out.write((length & 0x7f) | 0x80);
                length >>>= 7;
            }
            out.write(length);
        }
        out.writeBytes(bytes);
    }

    private static byte[] grpcMessage(byte[] payload) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(0);
        out.write(payload.length >>> 24);
        out.write(payload.length >>> 16);
        out.write(payload.length >>> 8);
        out.write(payload.length);
        out.writeBytes(payload);
        return out.toByteArray();
    }

    private static void writeVarint(ByteArrayOutputStream out, int value) {
        while ((value & ~0x7f) != 0) {
            out.write((value & 0x7f) | 0x80);
            value >>>= 7;
        }
        out.write(value);
    }
}
