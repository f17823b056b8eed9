package dev.blockpool.systemtest;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import java.util.regex.Pattern;

/**
 * Hostile HTTP against the driver's metrics endpoint, run beside the gRPC fuzz: in rounds, more
 * connections at once than the endpoint takes, each given one hostile exchange (garbage, odd
 * request lines, floods of headers, bodies that lie about their length, requests left half-sent
 * and held open, pipelines). Judged: nothing answered names a Java class, and after each round,
 * its connections closed, a plain scrape answers 200 with the driver's series again.
 */
final class HttpFuzzer {

    /** Connections a round holds at most: more than the endpoint's 16. */
    private static final int MOST_AT_ONCE = 40;
    /** How long a scrape after a round may take to come back, the held connections closed. */
    private static final int SCRAPE_BACK_WITHIN_MS = 15_000;

    private static final Pattern JAVA_NAME =
            Pattern.compile("\\b(java|javax|jdk|sun|com\\.sun|io\\.prometheus)\\.[a-z]+\\.|Exception\\b");
    private static final List<String> METHODS =
            List.of("GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "TRACE", "CONNECT", "PRI", "G\0ET", "get");
    private static final List<String> PATHS = List.of(
            "/metrics",
            "/",
            "/-/healthy",
            "*",
            "/metrics?name[]=csi_plugin_operations_seconds",
            "/metrics?debug=" + "x".repeat(4000),
            "/%00",
            "/../metrics",
            "http://[::1/metrics");
    private static final List<String> VERSIONS =
            List.of("HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/9.9", "", "HTTP/1.1 x");

    private final InetSocketAddress endpoint;
    private final Random random;
    private final List<String> findings = new CopyOnWriteArrayList<>();
    private final Map<String, Integer> kinds = new TreeMap<>();
    private int exchanges;
    private int rounds;

    HttpFuzzer(InetSocketAddress endpoint, Random random) {
        this.endpoint = endpoint;
        this.random = random;
    }

    /** Runs rounds while {@code keepGoing} says so. */
    void run(BooleanSupplier keepGoing) {
        while (keepGoing.getAsBoolean()) {
            round();
        }
    }

    /** What was found, each with what the round sent. */
    List<String> findings() {
        return List.copyOf(findings);
    }

    String statistics() {
        return "fuzz: metrics endpoint: %d rounds, %d hostile exchanges %s%n".formatted(rounds, exchanges, kinds);
    }

    private void round() {
        rounds++;
        List<Socket> held = new ArrayList<>();
        List<String> sent = new ArrayList<>();
        int connections = 1 + random.nextInt(MOST_AT_ONCE);
        try {
            for (int i = 0; i < connections; i++) {
                String kind = exchange(held);
                sent.add(kind);
                kinds.merge(kind, 1, Integer::sum);
                exchanges++;
            }
        } finally {
            held.forEach(HttpFuzzer::closeQuietly);
        }
        scrapeComesBack(sent);
    }

    /** One hostile exchange on a new connection; one left half-sent stays in {@code held}. */
    private String exchange(List<Socket> held) {
        Socket socket = new Socket();
        try {
            socket.connect(endpoint, 2000);
            socket.setSoTimeout(200);
        } catch (IOException e) {
            closeQuietly(socket);
            return "refused at connect"; // the endpoint holds as many as it takes: a finding of nothing
        }
        int roll = random.nextInt(7);
        String kind;
        byte[] bytes;
        boolean finished = true;
        switch (roll) {
            case 0 -> {
                kind = "garbage";
                bytes = new byte[1 + random.nextInt(4096)];
                random.nextBytes(bytes);
            }
            case 1 -> {
                kind = "odd request line";
                bytes = ascii("%s %s %s\r\nHost: x\r\n\r\n".formatted(pick(METHODS), pick(PATHS), pick(VERSIONS)));
            }
            case 2 -> {
                kind = "header flood";
                StringBuilder request = new StringBuilder("GET /metrics HTTP/1.1\r\n");
                int headers = 10 + random.nextInt(400);
                for (int h = 0; h < headers; h++) {
                    request.append("X-")
                            .append(h)
                            .append(": ")
                            .append("v".repeat(1 + random.nextInt(2000)))
                            .append("\r\n");
                }
                bytes = ascii(request.append("\r\n").toString());
            }
            case 3 -> {
                kind = "half-sent, held";
                bytes = ascii("GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + "s".repeat(random.nextInt(100)));
                finished = false;
            }
            case 4 -> {
                kind = "lying body";
                bytes = random.nextBoolean()
                        ? ascii("POST /metrics HTTP/1.1\r\nContent-Length: 1099511627776\r\n\r\nshort")
                        : ascii("POST /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                                + "fffffffffffffffff\r\nx\r\n");
            }
            case 5 -> {
                kind = "pipeline";
                bytes = ascii("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".repeat(1 + random.nextInt(50)));
            }
            default -> {
                kind = "odd headers";
                bytes = ascii("GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text; version=%s\r\n"
                                .formatted("9".repeat(random.nextInt(300)))
                        + "Accept-Encoding: gzip, " + "x;q=0.".repeat(random.nextInt(200)) + "\r\n"
                        + "Host:\r\n\tfolded\r\n\r\n");
            }
        }
        try {
            OutputStream out = socket.getOutputStream();
            out.write(bytes);
            out.flush();
            judge(kind, read(socket.getInputStream()));
        } catch (IOException e) {
            // the endpoint closed a connection that went past its bounds: what it should do
        }
        if (finished) {
            closeQuietly(socket);
        } else {
            held.add(socket);
        }
        return kind;
    }

    private void judge(String kind, String answer) {
        // The JDK's server itself rejects a request line it cannot parse with this text, before
        // any handler of the driver's sees it; any other class name is the driver's.
        String judged = answer.replace("URISyntaxException thrown", "");
        if (JAVA_NAME.matcher(judged).find()) {
            findings.add("the metrics endpoint's answer to %s names a Java class: %s"
                    .formatted(kind, answer.substring(0, Math.min(answer.length(), 300))));
        }
    }

    /** After the round, with its connections closed, a plain scrape answers the driver's series. */
    private void scrapeComesBack(List<String> sent) {
        long deadline = System.nanoTime() + SCRAPE_BACK_WITHIN_MS * 1_000_000L;
        String last = "";
        while (System.nanoTime() < deadline) {
            try (Socket socket = new Socket()) {
                socket.connect(endpoint, 2000);
                socket.setSoTimeout(5000);
                socket.getOutputStream().write(ascii("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
                String answer = readAll(socket.getInputStream());
                if (answer.startsWith("HTTP/1.1 200") && answer.contains("blockpool_build_info")) {
                    return;
                }
                last = answer.lines().findFirst().orElse("(no answer)");
            } catch (IOException e) {
                last = e.getMessage();
            }
            sleep(200);
        }
        findings.add("after a round of %d hostile connections, all closed, /metrics did not answer within %d s: %s"
                        .formatted(sent.size(), SCRAPE_BACK_WITHIN_MS / 1000, last)
                + "; the round sent " + sent);
    }

    private static String read(InputStream in) throws IOException {
        byte[] buffer = new byte[64 << 10];
        int n = 0;
        try {
            int got;
            while (n < buffer.length && (got = in.read(buffer, n, buffer.length - n)) > 0) {
                n += got;
            }
        } catch (SocketTimeoutException e) {
            // what it answered within the wait is what is judged
        }
        return new String(buffer, 0, n, StandardCharsets.ISO_8859_1);
    }

    private static String readAll(InputStream in) throws IOException {
        return new String(in.readNBytes(16 << 20), StandardCharsets.ISO_8859_1);
    }

    private String pick(List<String> values) {
        return values.get(random.nextInt(values.size()));
    }

    private static byte[] ascii(String text) {
        return text.getBytes(StandardCharsets.ISO_8859_1);
    }

    private static void closeQuietly(Socket socket) {
        try {
            socket.close();
        } catch (IOException e) {
            // closing is all that is left to do
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
