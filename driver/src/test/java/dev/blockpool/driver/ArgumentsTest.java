package dev.blockpool.driver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.csi.PoolScope;
import dev.blockpool.driver.logging.LogConfigurator.LogFormat;
import dev.blockpool.driver.logging.LogConfigurator.LogLevel;
import dev.blockpool.metrics.HttpAddress;
import dev.blockpool.peer.PeerAddress;
import dev.blockpool.peer.PeerConfig;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What the command line means, and the mistakes in it that are refused rather than guessed at. */
class ArgumentsTest {

    private static Arguments parse(Map<String, String> environment, String... args) throws Arguments.Usage {
        return Arguments.parse(args, environment);
    }

    @Test
    void defaultsAreTheDocumentedOnes() throws Exception {
        Arguments arguments = parse(Map.of());
        assertThat(arguments.endpoint()).isEmpty();
        assertThat(arguments.nodeId()).isEmpty();
        assertThat(arguments.driverName()).isEqualTo("blockpool.csi.dev");
        assertThat(arguments.poolDir()).isEqualTo(Path.of("/var/lib/blockpool"));
        assertThat(arguments.mode()).isEqualTo(Mode.ALL);
        assertThat(arguments.maxVolumesPerNode()).isEqualTo(64);
        assertThat(arguments.logLevel()).isEqualTo(LogLevel.INFO);
        assertThat(arguments.logFormat()).isEqualTo(LogFormat.TEXT);
        assertThat(arguments.shutdownGraceSeconds()).isEqualTo(25);
        assertThat(arguments.httpEndpoint()).isEmpty();
        assertThat(arguments.poolScope()).isEqualTo(PoolScope.Kind.NODE);
        assertThat(arguments.cgroupRoot()).isEqualTo(Path.of("/sys/fs/cgroup"));
        assertThat(parse(Map.of(), "--cgroup-root=/host/sys/fs/cgroup").cgroupRoot())
                .isEqualTo(Path.of("/host/sys/fs/cgroup"));
    }

    @Test
    void thePoolScopeIsNodeOrShared() throws Exception {
        assertThat(parse(Map.of(), "--pool-scope", "shared").poolScope()).isEqualTo(PoolScope.Kind.SHARED);
        assertThatThrownBy(() -> parse(Map.of(), "--pool-scope", "cluster"))
                .hasMessage("Invalid value for option '--pool-scope': 'cluster': expected one of node, shared");
    }

    @Test
    void helpOrVersionIsAllThatIsAskedAndHelpComesFirst() throws Exception {
        assertThat(parse(Map.of()).action()).isEqualTo(Arguments.Action.SERVE);
        assertThat(parse(Map.of(), "--version").action()).isEqualTo(Arguments.Action.VERSION);
        assertThat(parse(Map.of(), "--version", "--help").action()).isEqualTo(Arguments.Action.HELP);
    }

    @Test
    void theEndpointComesFromCsiEndpointUnlessGiven() throws Exception {
        assertThat(parse(Map.of("CSI_ENDPOINT", "unix:///csi/csi.sock"))
                        .endpoint()
                        .orElseThrow()
                        .socketPath())
                .isEqualTo(Path.of("/csi/csi.sock"));
        assertThat(parse(Map.of("CSI_ENDPOINT", "unix:///csi/csi.sock"), "--endpoint=/other.sock")
                        .endpoint()
                        .orElseThrow()
                        .socketPath())
                .isEqualTo(Path.of("/other.sock"));
        assertThatThrownBy(() -> parse(Map.of("CSI_ENDPOINT", "tcp://127.0.0.1:1")))
                .hasMessageStartingWith("Invalid value for option '--endpoint'");
    }

    @Test
    void namedValuesTakeAnyCase() throws Exception {
        Arguments arguments = parse(Map.of(), "--mode", "Node", "--log-level", "DEBUG", "--log-format", "json");
        assertThat(arguments.mode()).isEqualTo(Mode.NODE);
        assertThat(arguments.logLevel()).isEqualTo(LogLevel.DEBUG);
        assertThat(arguments.logFormat()).isEqualTo(LogFormat.JSON);
    }

    @Test
    void mistakesAreRefusedWithTheOptionNamed() {
        assertThatThrownBy(() -> parse(Map.of(), "--mode", "node", "--mode", "controller"))
                .hasMessage("option '--mode' should be specified only once");
        assertThatThrownBy(() -> parse(Map.of(), "--max-volumes-per-node", "many"))
                .hasMessage("Invalid value for option '--max-volumes-per-node': 'many': not a whole number");
        assertThatThrownBy(() -> parse(Map.of(), "--pool-dir", "/pool", "/stray"))
                .hasMessage("Unmatched argument: '/stray'");
        // An abbreviation is not taken for the option it starts: a typo must not pick one.
        assertThatThrownBy(() -> parse(Map.of(), "--pool", "/pool")).hasMessage("Unknown option: '--pool'");
    }

    @Test
    void theMetricsAreServedWhereTheSidecarsWouldServeThem() throws Exception {
        assertThat(parse(Map.of(), "--http-endpoint", ":8080").httpEndpoint()).contains(new HttpAddress("", 8080));
        assertThat(parse(Map.of(), "--http-endpoint=[::1]:9808").httpEndpoint()).contains(new HttpAddress("::1", 9808));
        assertThat(parse(Map.of(), "--http-endpoint=").httpEndpoint()).isEmpty();
        assertThatThrownBy(() -> parse(Map.of(), "--http-endpoint", "8080"))
                .hasMessage("Invalid value for option '--http-endpoint': '8080': expected host:port, "
                        + "e.g. :8080 or 0.0.0.0:8080");
        assertThatThrownBy(() -> parse(Map.of(), "--http-endpoint", ":http"))
                .hasMessage("Invalid value for option '--http-endpoint': ':http': the port is not a number");
    }

    @Test
    void thePeerChannelIsServedOnlyWhereAsked() throws Exception {
        assertThat(parse(Map.of()).peers()).isEmpty();
        // as the shared-pool manifests leave it: --peer-listen=$(PEER_LISTEN) with PEER_LISTEN empty
        assertThat(parse(Map.of(), "--peer-listen=").peers()).isEmpty();
        PeerConfig peers = parse(
                        Map.of(),
                        "--peer-listen=:9810",
                        "--peer=node-b=10.0.0.2:9810",
                        "--peer",
                        "node-c=10.0.0.3:9811",
                        "--peer-bandwidth=100Mi")
                .peers()
                .orElseThrow();
        assertThat(peers.listen()).isEqualTo(new HttpAddress("", 9810));
        assertThat(peers.caDir()).isEqualTo(Path.of(PeerConfig.DEFAULT_CA_DIR));
        assertThat(peers.peers())
                .containsExactly(
                        new PeerAddress("node-b", "10.0.0.2", 9810), new PeerAddress("node-c", "10.0.0.3", 9811));
        assertThat(peers.bandwidthBytesPerSecond()).isEqualTo(100L << 20);
        assertThat(peers.podSelector()).isEqualTo(PeerConfig.DEFAULT_POD_SELECTOR);
        assertThat(parse(Map.of(), "--peer-listen=:9810", "--peer-selector=app=blockpool,tier!=test")
                        .peers()
                        .orElseThrow()
                        .podSelector())
                .isEqualTo("app=blockpool,tier!=test");

        assertThatThrownBy(() -> parse(Map.of(), "--peer=node-b=10.0.0.2:9810"))
                .hasMessage("option '--peer' needs --peer-listen");
        assertThatThrownBy(() -> parse(Map.of(), "--peer-selector=app=x"))
                .hasMessage("option '--peer-selector' needs --peer-listen");
        assertThatThrownBy(() ->
                        parse(Map.of(), "--peer-listen=:9810", "--peer=node-b=10.0.0.2:9810", "--peer-selector=app=x"))
                .hasMessageContaining("give one of the two");
        assertThatThrownBy(() -> parse(Map.of(), "--peer-listen=:9810", "--peer-selector= "))
                .hasMessageContaining("the pod selector is empty");
        assertThatThrownBy(() -> parse(Map.of(), "--peer-listen=:0"))
                .hasMessage("Invalid value for option '--peer-listen': ':0': the other nodes need a fixed port, "
                        + "e.g. :9810");
        assertThatThrownBy(() -> parse(Map.of(), "--peer-listen=:9810", "--peer=node-b"))
                .hasMessageStartingWith("Invalid value for option '--peer': 'node-b': expected NODE=HOST:PORT");
    }
}
