package dev.blockpool.pool;

import java.util.List;

/**
 * Holds a group's members still while their snapshots are taken: the file systems this host
 * has mounted from them are frozen, so the members are of one instant. Where the driver does
 * not hold the members' mounts ({@link #NONE}: a controller of a shared pool), each member is
 * crash-consistent on its own. A freeze is held for a bounded time only: past it the members
 * are thawed whether or not they have all been taken.
 *
 * <p>The controller's group snapshots ask it, and the node's {@code GroupMemberFreeze} answers
 * it where one process serves both: the contract lives here, below the two, which never import
 * each other.
 */
public interface MemberFreeze {

    /**
     * Freezes what it can of these volumes, once what an earlier freeze left of them is thawed;
     * closing the answer thaws it.
     */
    Frozen freeze(List<String> volumeIds);

    /**
     * Thaws what an earlier freeze of these volumes left frozen (its thaw failed); throws while
     * the kernel does not answer that one of them is thawed.
     */
    void thawLeft(List<String> volumeIds);

    /** Frozen members; {@link #close} thaws them, also when taking the members failed. */
    interface Frozen extends AutoCloseable {

        /** The volumes whose file systems are frozen. */
        List<String> volumeIds();

        /** False once the freeze outlived its bound and the members were thawed: they are not of one instant. */
        boolean heldThroughout();

        @Override
        void close();
    }

    /** Freezes nothing. */
    MemberFreeze NONE = new MemberFreeze() {
        @Override
        public Frozen freeze(List<String> volumeIds) {
            return new Frozen() {
                @Override
                public List<String> volumeIds() {
                    return List.of();
                }

                @Override
                public boolean heldThroughout() {
                    return true;
                }

                @Override
                public void close() {}
            };
        }

        @Override
        public void thawLeft(List<String> volumeIds) {}
    };
}
