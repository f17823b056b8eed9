package dev.blockpool.metrics;

import io.prometheus.metrics.core.metrics.Info;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

/** {@code blockpool_build_info}: always 1, its labels say which driver serves, and what it serves. */
public final class BuildInfo {

    private BuildInfo() {}

    /**
     * @param version this build's version
     * @param csiSpecVersion the CSI spec it serves
     * @param mode the services it serves: controller, node or all
     */
    public static void register(
            PrometheusRegistry registry, String driverName, String version, String csiSpecVersion, String mode) {
        Info.builder()
                .name("blockpool_build_info")
                .help("The driver that serves: its name, version, the CSI spec version and its mode")
                .labelNames("driver_name", "version", "csi_spec_version", "mode")
                .register(registry)
                .setLabelValues(driverName, version, csiSpecVersion, mode);
    }
}
