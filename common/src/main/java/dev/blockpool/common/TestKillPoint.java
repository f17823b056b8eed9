package dev.blockpool.common;

/**
 * For the race test alone: stops the driver dead at a named step of a call, as SIGKILL would at
 * that instant, so that the test reaches the state a kill leaves there every time rather than
 * by chance. Off unless the driver's process was started with the environment variable
 * {@code BLOCKPOOL_TEST_KILL_POINT} set to a step's name ({@code publish.before-flags}), or to
 * {@code NAME@N} to stop at the step's N-th passage. Nothing a request carries can set it: it is
 * read once, from the environment the process was started with.
 *
 * <p>The steps: {@code stage.after-attach} (the image on a loop device, nothing mounted),
 * {@code publish.before-flags} (a read-only bind's copy made, not yet given its flags where
 * the kernel has the new mount API, or bound but not yet remounted where it has not),
 * {@code publish.after-bind} (the target bound, no answer sent), {@code unpublish.after-unmount}
 * (the target unmounted, not yet removed), {@code expand.image-grown} (the image grown, its
 * record not yet), {@code record.temp-written} (a record's next content flushed to its
 * temporary file, not yet renamed into place), {@code pull.chunk-written} (a chunk of a pull
 * written into its image, not yet recorded) and {@code move.committed} (a moved volume
 * committed on its new node, not yet retired on the old).
 */
public final class TestKillPoint {

    /** The variable that names the step; unset (always, outside the race test) is off. */
    public static final String VARIABLE = "BLOCKPOOL_TEST_KILL_POINT";

    private static final String NAME;
    private static final int PASSAGE;
    private static int passed;

    static {
        String value = System.getenv(VARIABLE);
        if (value == null || value.isBlank()) {
            NAME = null;
            PASSAGE = 0;
        } else {
            int at = value.indexOf('@');
            NAME = at < 0 ? value.strip() : value.substring(0, at).strip();
            PASSAGE = at < 0 ? 1 : Integer.parseInt(value.substring(at + 1).strip());
        }
    }

    private TestKillPoint() {}

    /** The process ends here, at once and without any clean-up, when this is the step named (and its passage). */
    public static void reached(String step) {
        if (NAME == null || !NAME.equals(step)) {
            return;
        }
        synchronized (TestKillPoint.class) {
            if (++passed == PASSAGE) {
                System.err.println("blockpool-csi: stopping dead at " + step + " (" + VARIABLE + ")");
                Runtime.getRuntime().halt(137);
            }
        }
    }
}
