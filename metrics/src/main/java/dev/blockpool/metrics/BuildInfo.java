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
     * @param poolScope whose pool it serves: node (this node's own) or shared
     */
    public record Build(String driverName, String version, String csiSpecVersion, String mode, String poolScope) {}

    public static void register(PrometheusRegistry registry, Build build) {
        Info.builder()
                .name("blockpool_build_info")
                .help("The driver that serves: its name, version, the CSI spec version, its mode and pool scope")
                .labelNames("driver_name", "version", "csi_spec_version", "mode", "pool_scope")
                .register(registry)
                .setLabelValues(
                        build.driverName(), build.version(), build.csiSpecVersion(), build.mode(), build.poolScope());
    }
}
