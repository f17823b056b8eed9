package dev.blockpool.driver;

import dev.blockpool.common.Endpoint;
import dev.blockpool.csi.PoolScope;
import dev.blockpool.host.cgroups.LinuxPodCgroupCalls;
import dev.blockpool.metrics.HttpAddress;
import dev.blockpool.peer.PeerConfig;
import dev.blockpool.pool.CapacityPolicy;
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
        PoolScope.Kind poolScope,
        Optional<HttpAddress> httpEndpoint,
        CapacityPolicy capacity,
        Optional<PeerConfig> peers,
        Path cgroupRoot) {

    /** A driver that finds the host's cgroups where they are on the host, {@code /sys/fs/cgroup}. */
    public DriverConfig(
            Endpoint endpoint,
            String nodeId,
            String driverName,
            Path poolDir,
            Mode mode,
            int maxVolumesPerNode,
            PoolScope.Kind poolScope,
            Optional<HttpAddress> httpEndpoint,
            CapacityPolicy capacity,
            Optional<PeerConfig> peers) {
        this(
                endpoint,
                nodeId,
                driverName,
                poolDir,
                mode,
                maxVolumesPerNode,
                poolScope,
                httpEndpoint,
                capacity,
                peers,
                LinuxPodCgroupCalls.HOST_ROOT);
    }

    /** A driver whose pool promises what the default policy allows. */
    public DriverConfig(
            Endpoint endpoint,
            String nodeId,
            String driverName,
            Path poolDir,
            Mode mode,
            int maxVolumesPerNode,
            PoolScope.Kind poolScope,
            Optional<HttpAddress> httpEndpoint) {
        this(
                endpoint,
                nodeId,
                driverName,
                poolDir,
                mode,
                maxVolumesPerNode,
                poolScope,
                httpEndpoint,
                CapacityPolicy.DEFAULT,
                Optional.empty());
    }

    /** A driver on a shared pool that serves no metrics. */
    public DriverConfig(
            Endpoint endpoint, String nodeId, String driverName, Path poolDir, Mode mode, int maxVolumesPerNode) {
        this(endpoint, nodeId, driverName, poolDir, mode, maxVolumesPerNode, PoolScope.Kind.SHARED, Optional.empty());
    }

    /** The scope of this driver's pool: node-local pools are this node's. */
    public PoolScope scope() {
        return poolScope == PoolScope.Kind.NODE ? PoolScope.nodeLocal(nodeId) : PoolScope.shared();
    }
}
