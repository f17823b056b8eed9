package dev.blockpool.metrics;

import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.regex.Pattern;

/** What Prometheus gets: a GET of /metrics from a {@link MetricsEndpoint} serving the registry on the loopback. */
final class Scrape {

    private Scrape() {}

    static String of(PrometheusRegistry registry) {
        try (MetricsEndpoint endpoint = MetricsEndpoint.start(new HttpAddress("127.0.0.1", 0), registry);
                HttpClient client = HttpClient.newHttpClient()) {
            HttpResponse<String> response = client.send(
                    HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + endpoint.port() + "/metrics"))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() != 200) {
                throw new IllegalStateException("/metrics answered " + response.statusCode());
            }
            return response.body();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The value of the sample line that starts with {@code series} (name and labels as written). */
    static List<Double> values(String text, String series) {
        return text.lines()
                .filter(line -> line.startsWith(series + " "))
                .map(line ->
                        Double.parseDouble(line.substring(series.length() + 1).split(" ")[0]))
                .toList();
    }

    /** The sample lines of a metric whose labels include all of {@code labels} (as {@code name="value"}). */
    static List<String> lines(String text, String metric, String... labels) {
        Pattern start = Pattern.compile("^" + Pattern.quote(metric) + "[{ ].*");
        return text.lines()
                .filter(line -> start.matcher(line).matches())
                .filter(line -> List.of(labels).stream().allMatch(line::contains))
                .toList();
    }
}
