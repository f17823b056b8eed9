package dev.blockpool.pool;

/**
 * Told before each step of a reconcile ({@link Pool#reconcile(dev.blockpool.common.OperationLocks,
 * ReconcileSteps)}), by a name that says what the step is about to do. An exception thrown here
 * ends the reconcile before that step, with nothing of it done: how a stopping driver ends its
 * reconcile between two steps rather than in the middle of one.
 */
@FunctionalInterface
public interface ReconcileSteps {

    /** Every step runs. */
    ReconcileSteps ALL = step -> {};

    void before(String step);
}
