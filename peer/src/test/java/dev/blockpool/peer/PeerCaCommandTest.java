package dev.blockpool.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Base64;
import java.util.List;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** blockpool-csi peer-ca: making the CA, in a directory or a Secret, and each step of its rotation. */
class PeerCaCommandTest {

    private static final String SECRETS = "/api/v1/namespaces/blockpool-system/secrets";

    @TempDir
    Path dir;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    @Test
    void makesACaWhoseKeyOnlyItsOwnerReads() throws Exception {
        assertThat(run("--out", dir.toString())).isZero();

        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve(ClusterCa.KEY))))
                .isEqualTo("rw-------");
        ClusterCa ca = ClusterCa.read(dir);
        assertThat(ca.trusted()).containsExactly(ca.signer());
        assertThat(ca.signer().getBasicConstraints()).isGreaterThanOrEqualTo(0);
        assertThat(out.toString(StandardCharsets.UTF_8)).doesNotContain("PRIVATE KEY");
    }

    @Test
    void refusesToOverwriteACa() throws Exception {
        assertThat(run("--out", dir.toString())).isZero();
        byte[] key = Files.readAllBytes(dir.resolve(ClusterCa.KEY));

        assertThat(run("--out", dir.toString())).isEqualTo(1);

        assertThat(Files.readAllBytes(dir.resolve(ClusterCa.KEY))).isEqualTo(key);
        assertThat(err.toString(StandardCharsets.UTF_8))
                .contains(dir.resolve(ClusterCa.BUNDLE).toString())
                .contains("a CA is already there")
                .doesNotContain("Exception");
    }

    @Test
    void rotatesInThreeSteps() throws Exception {
        assertThat(run("--out", dir.toString())).isZero();
        ClusterCa first = ClusterCa.read(dir);

        assertThat(run("--out", dir.toString(), "--rotate")).isZero();
        ClusterCa rotating = ClusterCa.read(dir);
        assertThat(rotating.trusted()).hasSize(2).startsWith(first.signer());
        assertThat(rotating.signer()).isEqualTo(first.signer()); // nodes still sign with the old key
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve(ClusterCa.NEXT_KEY))))
                .isEqualTo("rw-------");

        assertThat(run("--out", dir.toString(), "--switch-key")).isZero();
        ClusterCa switched = ClusterCa.read(dir);
        assertThat(switched.signer()).isEqualTo(rotating.trusted().get(1));
        assertThat(switched.trusted()).hasSize(2);
        assertThat(dir.resolve(ClusterCa.NEXT_KEY)).doesNotExist();

        assertThat(run("--out", dir.toString(), "--retire-old")).isZero();
        assertThat(ClusterCa.read(dir).trusted()).containsExactly(switched.signer());
    }

    @Test
    void aMistakeOnTheCommandLineIsSaidWithTheUsage() {
        assertThat(run("--rotate")).isEqualTo(2);
        assertThat(err.toString(StandardCharsets.UTF_8))
                .contains("--out DIR or --secret NAMESPACE/NAME is required")
                .contains("usage:");
    }

    @Test
    void makesTheSecretWhenItIsNotThere() throws Exception {
        try (FakeApiServer apiServer = new FakeApiServer()) {
            apiServer.reply("POST", SECRETS, 201, "{}");

            assertThat(runInCluster(apiServer, "--secret", "blockpool-system/blockpool-peer-ca"))
                    .isZero();

            assertThat(apiServer.requests())
                    .extracting(FakeApiServer.Request::method, FakeApiServer.Request::pathAndQuery)
                    .containsExactly(tuple("GET", SECRETS + "/blockpool-peer-ca"), tuple("POST", SECRETS));
            String secret = apiServer.requests().get(1).body();
            assertThat(secret)
                    .contains("\"kind\":\"Secret\"")
                    .contains("\"metadata\":{\"name\":\"blockpool-peer-ca\",\"namespace\":\"blockpool-system\"");
            Files.write(dir.resolve(ClusterCa.BUNDLE), dataOf(secret, ClusterCa.BUNDLE));
            Files.write(dir.resolve(ClusterCa.KEY), dataOf(secret, ClusterCa.KEY));
            ClusterCa ca = ClusterCa.read(dir);
            assertThat(ca.trusted()).containsExactly(ca.signer());
            assertThat(out.toString(StandardCharsets.UTF_8))
                    .contains("made a new peer CA in the Secret blockpool-system/blockpool-peer-ca")
                    .doesNotContain("PRIVATE KEY");
        }
    }

    @Test
    void leavesAnExistingSecretAlone() throws Exception {
        try (FakeApiServer apiServer = new FakeApiServer()) {
            apiServer.reply("GET", SECRETS + "/blockpool-peer-ca", 200, "{\"kind\":\"Secret\"}");

            assertThat(runInCluster(apiServer, "--secret", "blockpool-system/blockpool-peer-ca"))
                    .isZero();

            assertThat(apiServer.requests())
                    .extracting(FakeApiServer.Request::method)
                    .containsExactly("GET");
            assertThat(out.toString(StandardCharsets.UTF_8)).contains("is there already; left as it is");
        }
    }

    @Test
    void aSecretMadeByARacingJobIsSuccess() throws Exception {
        try (FakeApiServer apiServer = new FakeApiServer()) {
            apiServer.reply("POST", SECRETS, 409, "{\"kind\":\"Status\",\"reason\":\"AlreadyExists\",\"code\":409}");

            assertThat(runInCluster(apiServer, "--secret", "blockpool-system/blockpool-peer-ca"))
                    .isZero();

            assertThat(out.toString(StandardCharsets.UTF_8)).contains("made by another at the same time");
        }
    }

    @Test
    void aRefusalSaysWhichPermissionIsMissing() throws Exception {
        try (FakeApiServer apiServer = new FakeApiServer()) {
            apiServer.reply("GET", SECRETS + "/blockpool-peer-ca", 403, "{\"kind\":\"Status\",\"code\":403}");

            assertThat(runInCluster(apiServer, "--secret", "blockpool-system/blockpool-peer-ca"))
                    .isEqualTo(1);

            assertThat(err.toString(StandardCharsets.UTF_8))
                    .contains("HTTP 403")
                    .contains("needs a Role that may get the secret blockpool-peer-ca in namespace blockpool-system")
                    .doesNotContain("Exception");
        }
        try (FakeApiServer apiServer = new FakeApiServer()) {
            apiServer.reply("POST", SECRETS, 403, "{\"kind\":\"Status\",\"code\":403}");

            assertThat(runInCluster(apiServer, "--secret", "blockpool-system/blockpool-peer-ca"))
                    .isEqualTo(1);

            assertThat(err.toString(StandardCharsets.UTF_8))
                    .contains("needs a Role that may create secrets in namespace blockpool-system");
        }
    }

    @Test
    void theSecretIsNamedAsKubernetesNamesThingsAndAlone() throws Exception {
        try (FakeApiServer apiServer = new FakeApiServer()) {
            assertThat(runInCluster(apiServer, "--secret", "blockpool-peer-ca")).isEqualTo(2);
            assertThat(runInCluster(apiServer, "--secret", "../x/y")).isEqualTo(2);
            assertThat(runInCluster(apiServer, "--secret", "ns/name", "--rotate"))
                    .isEqualTo(2);
            assertThat(runInCluster(apiServer, "--secret", "ns/name", "--out", dir.toString()))
                    .isEqualTo(2);

            assertThat(apiServer.requests()).isEmpty();
            assertThat(err.toString(StandardCharsets.UTF_8))
                    .contains("--secret takes NAMESPACE/NAME")
                    .contains("rotate it on the files with --out DIR");
        }
    }

    private int run(String... args) {
        return run(
                () -> {
                    throw new AssertionError("--out never reaches the API server");
                },
                args);
    }

    private int runInCluster(FakeApiServer apiServer, String... args) throws Exception {
        Path token = Files.writeString(dir.resolve("token"), "job-token");
        return run(() -> apiServer.api(token, "blockpool-system"), args);
    }

    private int run(Supplier<KubernetesApi> cluster, String... args) {
        return new PeerCaCommand(
                        new PrintStream(out, true, StandardCharsets.UTF_8),
                        new PrintStream(err, true, StandardCharsets.UTF_8),
                        cluster)
                .execute(List.of(args));
    }

    /** A key of the Secret's data, decoded. */
    private static byte[] dataOf(String secret, String key) {
        Matcher data = Pattern.compile("\"" + Pattern.quote(key) + "\":\"([A-Za-z0-9+/=]+)\"")
                .matcher(secret);
        assertThat(data.find()).as("the Secret holds %s", key).isTrue();
        return Base64.getDecoder().decode(data.group(1));
    }
}
