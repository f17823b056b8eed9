package dev.blockpool.controller;

import java.util.List;

/**
 * Holds a group's members still while their snapshots are taken: the file systems this host
 * has mounted from them are frozen, so the members are of one instant. Where the driver does
 * not hold the members' mounts ({@link #NONE}: a controller of a shared pool), each member is
 * crash-consistent on its own.
 */
public interface MemberFreeze {

    /** Freezes what it can of these volumes; closing the answer thaws it. */
    Frozen freeze(List<String> volumeIds);

    /** Frozen members; {@link #close} thaws them, also when taking the members failed. */
    interface Frozen extends AutoCloseable {

        /** The volumes whose file systems are frozen. */
        List<String> volumeIds();

        @Override
        void close();
    }

    /** Freezes nothing. */
    MemberFreeze NONE = volumeIds -> new Frozen() {
        @Override
        public List<String> volumeIds() {
            return List.of();
        }

        @Override
        public void close() {}
    };
}
