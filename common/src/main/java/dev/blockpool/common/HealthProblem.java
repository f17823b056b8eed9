package dev.blockpool.common;

/**
 * One thing known to be wrong with a volume or with the pool, as the health RPCs report it:
 * how bad it is, a short CamelCase reason for machines and a message for a person.
 */
public record HealthProblem(Severity severity, String reason, String message) {

    /** CSI's VolumeHealthErrorType, without gRPC. */
    public enum Severity {
        /** Usable, but not as it should be (e.g. writes into holes may fail). */
        DEGRADED,
        /** Cannot be used from here. */
        INACCESSIBLE,
        /** Data is lost or strongly suspected lost. */
        DATA_LOSS
    }

    public static HealthProblem degraded(String reason, String message) {
        return new HealthProblem(Severity.DEGRADED, reason, message);
    }

    public static HealthProblem inaccessible(String reason, String message) {
        return new HealthProblem(Severity.INACCESSIBLE, reason, message);
    }

    public static HealthProblem dataLoss(String reason, String message) {
        return new HealthProblem(Severity.DATA_LOSS, reason, message);
    }
}
