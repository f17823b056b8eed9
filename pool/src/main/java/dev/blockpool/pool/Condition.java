package dev.blockpool.pool;

/** The health of a volume as seen from the pool: CSI's volume_condition. */
public record Condition(boolean abnormal, String message) {

    public static final Condition HEALTHY = new Condition(false, "volume is healthy");

    public static Condition abnormal(String message) {
        return new Condition(true, message);
    }
}
