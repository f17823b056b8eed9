package dev.blockpool.common;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class EndpointTest {

    @ParameterizedTest
    @ValueSource(
            strings = {"unix:///csi/csi.sock", "unix:/csi/csi.sock", "/csi/csi.sock", "unix:///csi//x/../csi.sock"})
    void acceptsUnixSocketForms(String value) {
        assertThat(Endpoint.parse(value).socketPath()).isEqualTo(Path.of("/csi/csi.sock"));
    }

    @Test
    void relativePathIsResolvedAgainstTheWorkingDirectory() {
        assertThat(Endpoint.parse("csi.sock").socketPath())
                .isEqualTo(Path.of("csi.sock").toAbsolutePath());
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp://127.0.0.1:10000", "http://localhost/csi.sock", "dns:///csi", "tcp:1.2.3.4:9000"})
    void refusesOtherSchemes(String value) {
        assertThatThrownBy(() -> Endpoint.parse(value))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("is not a Unix socket");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "  ", "unix://", "unix:///csi/"})
    void refusesEndpointsWithoutASocketFile(String value) {
        assertThatThrownBy(() -> Endpoint.parse(value)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void refusesSocketPathsThatDoNotFitSunPath() {
        String path107 = "/" + "a".repeat(106);
        assertThat(Endpoint.parse(path107).socketPath().toString()).hasSize(107);
        String path108 = "/" + "a".repeat(107);
        assertThatThrownBy(() -> Endpoint.parse("unix://" + path108))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("is 108 bytes; Unix sockets allow at most 107");
    }
}
