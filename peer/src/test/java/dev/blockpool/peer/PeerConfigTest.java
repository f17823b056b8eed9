package dev.blockpool.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.metrics.HttpAddress;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The peer channel's flags, parsed. */
class PeerConfigTest {

    @Test
    void aPeerIsNodeEqualsHostColonPort() {
        assertThat(PeerAddress.parse("node-b=10.0.0.2:9810")).isEqualTo(new PeerAddress("node-b", "10.0.0.2", 9810));
        assertThat(PeerAddress.parse("node-b=[fd00::2]:9810")).isEqualTo(new PeerAddress("node-b", "fd00::2", 9810));
        assertThatThrownBy(() -> PeerAddress.parse("10.0.0.2:9810")).hasMessageContaining("NODE=HOST:PORT");
        assertThatThrownBy(() -> PeerAddress.parse("node-b=:9810")).hasMessageContaining("with a host");
    }

    @Test
    void theBandwidthIsAQuantityOfBytesPerSecond() {
        assertThat(PeerConfig.parseBandwidth("100Mi")).isEqualTo(100L << 20);
        assertThat(PeerConfig.parseBandwidth("0")).isZero();
        assertThatThrownBy(() -> PeerConfig.parseBandwidth("fast")).hasMessageContaining("is not a size");
    }

    @Test
    void theStaticDirectoryLeavesThisNodeOut() {
        PeerConfig config = new PeerConfig(
                HttpAddress.parse(PeerConfig.DEFAULT_LISTEN),
                Path.of("/unused"),
                0,
                List.of(PeerAddress.parse("node-a=127.0.0.1:9810"), PeerAddress.parse("node-b=127.0.0.1:9811")),
                PeerConfig.DEFAULT_POD_SELECTOR);

        assertThat(config.directory("node-a").peers()).containsExactly(PeerAddress.parse("node-b=127.0.0.1:9811"));
    }

    @Test
    void aNodeGivenTwiceIsAMistake() {
        assertThatThrownBy(() -> new PeerConfig(
                        HttpAddress.parse(PeerConfig.DEFAULT_LISTEN),
                        Path.of("/unused"),
                        0,
                        List.of(PeerAddress.parse("node-b=127.0.0.1:1"), PeerAddress.parse("node-b=127.0.0.1:2")),
                        PeerConfig.DEFAULT_POD_SELECTOR))
                .hasMessageContaining("node-b is given twice");
    }

    @Test
    void anEmptySelectorIsAMistake() {
        assertThatThrownBy(() -> new PeerConfig(
                        HttpAddress.parse(PeerConfig.DEFAULT_LISTEN), Path.of("/unused"), 0, List.of(), ""))
                .hasMessageContaining("the pod selector is empty");
    }
}
