package dev.blockpool.driver;

import static dev.blockpool.driver.DriversOnOnePool.ready;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two node plugins started with one node ID on one pool: the first serves it, the second is not
 * ready and names the first (its pid and host), until the first stops.
 */
class DuplicateNodeIdTest {

    @TempDir
    Path dir;

    @Test
    void aSecondPluginWithTheSameNodeIdIsNotReadyAndNamesTheHolder() throws Exception {
        try (DriversOnOnePool drivers = new DriversOnOnePool(dir)) {
            Driver.Running first = drivers.start("first", "node-1", Mode.NODE);
            Driver.Running second = drivers.start("second", "node-1", Mode.NODE);
            drivers.start("other", "node-2", Mode.NODE);
            ManagedChannel firstChannel = drivers.channel("first");
            ManagedChannel secondChannel = drivers.channel("second");
            ManagedChannel otherChannel = drivers.channel("other");

            assertThat(ready(firstChannel)).isTrue();
            assertThat(ready(otherChannel))
                    .as("another node ID on the same pool")
                    .isTrue();
            assertThat(ready(secondChannel)).isFalse();
            assertThat(second.nodeClaim().orElseThrow().problem())
                    .hasValueSatisfying(problem -> assertThat(problem)
                            .startsWith("another node plugin serves node ID node-1 on this pool (pid "
                                    + ProcessHandle.current().pid() + " on host ")
                            .endsWith("; give each node plugin a node ID of its own"));

            first.stop(Duration.ofSeconds(10));

            assertThat(ready(secondChannel))
                    .as("the ID is free once its holder stopped")
                    .isTrue();
        }
    }
}
