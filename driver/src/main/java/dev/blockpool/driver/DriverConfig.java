package dev.blockpool.driver;

import dev.blockpool.common.Endpoint;
import dev.blockpool.metrics.HttpAddress;
import java.nio.file.Path;
import java.util.Optional;

/** The driver's settings, as given on the command line. */
public record DriverConfig(
        Endpoint endpoint,
        String nodeId,
        String driverName,
        Path poolDir,
        Mode mode,
        int maxVolumesPerNode,
        Optional<HttpAddress> httpEndpoint) {

    /** A driver that serves no metrics. */
    public DriverConfig(
            Endpoint endpoint, String nodeId, String driverName, Path poolDir, Mode mode, int maxVolumesPerNode) {
        this(endpoint, nodeId, driverName, poolDir, mode, maxVolumesPerNode, Optional.empty());
    }
}
