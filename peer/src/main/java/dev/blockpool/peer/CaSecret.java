package dev.blockpool.peer;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Base64;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The cluster's peer CA kept in a Kubernetes Secret, {@value ClusterCa#BUNDLE} and {@value
 * ClusterCa#KEY} its keys, as the node plugin mounts it at {@code --peer-ca-dir}. Made once, by
 * the install's Job: a Secret that is there is left alone, whoever made it, so that a Job run
 * again (or two at once) never replaces the CA the nodes trust. Rotation is done on the files
 * (docs/peers.md).
 */
record CaSecret(String namespace, String name) {

    /** What {@link #ensure} found. */
    enum Outcome {
        CREATED,
        ALREADY_THERE,
        /** Another creator's request came first: there is one CA, theirs. */
        CREATED_BY_ANOTHER
    }

    /** A DNS-1123 subdomain, as Kubernetes names namespaces and Secrets: nothing else goes into the path. */
    private static final Pattern NAME = Pattern.compile("[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?");

    private static final JsonFactory JSON = new JsonFactory();

    /** {@code NAMESPACE/NAME}, as {@code peer-ca --secret} takes it. */
    static CaSecret parse(String value) {
        int slash = value.indexOf('/');
        if (slash < 0
                || !NAME.matcher(value.substring(0, slash)).matches()
                || !NAME.matcher(value.substring(slash + 1)).matches()) {
            throw new IllegalArgumentException(
                    "--secret takes NAMESPACE/NAME, both Kubernetes names, e.g. blockpool-system/blockpool-peer-ca");
        }
        return new CaSecret(value.substring(0, slash), value.substring(slash + 1));
    }

    /** Makes the Secret with a new CA unless it exists. */
    Outcome ensure(KubernetesApi api, Instant now) {
        String secrets = "/api/v1/namespaces/" + namespace + "/secrets";
        boolean there = api.send(
                "GET",
                secrets + "/" + name,
                Optional.empty(),
                "get the secret " + name + " in namespace " + namespace,
                (status, body) -> switch (status) {
                    case 200 -> Optional.of(true);
                    case 404 -> Optional.of(false);
                    default -> Optional.empty();
                });
        if (there) {
            return Outcome.ALREADY_THERE;
        }
        return api.send(
                "POST",
                secrets,
                Optional.of(json(ClusterCa.newFiles(now))),
                "create secrets in namespace " + namespace,
                (status, body) -> switch (status) {
                    case 201 -> Optional.of(Outcome.CREATED);
                    case 409 -> Optional.of(Outcome.CREATED_BY_ANOTHER);
                    default -> Optional.empty();
                });
    }

    private String json(Map<String, String> files) {
        StringWriter text = new StringWriter();
        try (JsonGenerator json = JSON.createGenerator(text)) {
            json.writeStartObject();
            json.writeStringField("apiVersion", "v1");
            json.writeStringField("kind", "Secret");
            json.writeObjectFieldStart("metadata");
            json.writeStringField("name", name);
            json.writeStringField("namespace", namespace);
            json.writeObjectFieldStart("labels");
            json.writeStringField("app.kubernetes.io/part-of", "blockpool");
            json.writeEndObject();
            json.writeEndObject();
            json.writeStringField("type", "Opaque");
            json.writeObjectFieldStart("data");
            for (Map.Entry<String, String> file : files.entrySet()) {
                json.writeStringField(
                        file.getKey(),
                        Base64.getEncoder().encodeToString(file.getValue().getBytes(StandardCharsets.US_ASCII)));
            }
            json.writeEndObject();
            json.writeEndObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a StringWriter does not fail
        }
        return text.toString();
    }

    @Override
    public String toString() {
        return namespace + "/" + name;
    }
}
