package dev.blockpool.csi;

import csi.v1.Csi;
import dev.blockpool.common.HealthProblem;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The driver's {@link HealthProblem}s as CSI's health messages, for the controller and the node alike. */
public final class HealthMessages {

    private HealthMessages() {}

    public static Csi.VolumeHealth volume(String volumeId, List<HealthProblem> problems) {
        var health = Csi.VolumeHealth.newBuilder().setVolumeId(volumeId);
        // The spec allows one entry per (status, reason): the same problem at two mounts is one entry.
        Map<List<Object>, List<String>> messages = new LinkedHashMap<>();
        problems.forEach(p -> messages.computeIfAbsent(List.of(p.severity(), p.reason()), k -> new ArrayList<>())
                .add(p.message()));
        messages.forEach((key, texts) -> health.addHealthStatuses(Csi.VolumeHealth.VolumeHealthEntry.newBuilder()
                .setStatus(
                        switch ((HealthProblem.Severity) key.get(0)) {
                            case DEGRADED -> Csi.VolumeHealthErrorType.DEGRADED;
                            case INACCESSIBLE -> Csi.VolumeHealthErrorType.INACCESSIBLE;
                            case DATA_LOSS -> Csi.VolumeHealthErrorType.DATA_LOSS;
                        })
                .setReason((String) key.get(1))
                .setMessage(String.join("; ", texts.stream().distinct().toList()))));
        return health.build();
    }

    /** A problem of the storage behind every volume: unreachable when nothing can be used, else degraded. */
    public static Csi.NodeGetStorageHealthResponse.StorageBackendHealth storage(HealthProblem problem) {
        return Csi.NodeGetStorageHealthResponse.StorageBackendHealth.newBuilder()
                .setStatus(
                        problem.severity() == HealthProblem.Severity.DEGRADED
                                ? Csi.StorageHealthErrorType.STORAGE_DEGRADED
                                : Csi.StorageHealthErrorType.STORAGE_UNREACHABLE)
                .setReason(problem.reason())
                .setMessage(problem.message())
                .build();
    }
}
