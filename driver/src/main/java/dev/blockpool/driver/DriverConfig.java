package dev.blockpool.driver;

import dev.blockpool.common.Endpoint;
import java.nio.file.Path;

/** The driver's settings, as given on the command line. */
public record DriverConfig(
        Endpoint endpoint, String nodeId, String driverName, Path poolDir, Mode mode, int maxVolumesPerNode) {}
