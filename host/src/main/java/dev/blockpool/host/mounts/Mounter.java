package dev.blockpool.host.mounts;

import dev.blockpool.common.FsType;
import java.nio.file.Path;
import java.util.List;

/** Mounts and unmounts through mount(2) and umount2(2), with every result verified against the mount table. */
public interface Mounter {

    /** Mounts the filesystem on {@code device} at {@code target} with already-validated options. */
    void mount(Path device, Path target, FsType type, List<String> options);

    /**
     * Bind-mounts {@code source} (a directory or a device node) onto {@code target}, then
     * remounts the bind read-only and/or with the given per-mount flags when asked.
     */
    void bind(Path source, Path target, boolean readOnly, List<String> options);

    /**
     * Whether {@link #bind} mounts a bind with its flags in one step, so that no bind of it is
     * ever seen, or left by a kill, without them (the new mount API, Linux 5.12). Where not, a
     * bind and a remount: a kill between them leaves the bind read-write, which a repeat of the
     * publish repairs with {@link #setBindFlags}.
     */
    boolean bindsAtomically();

    /** Sets the per-mount flags of the bind at {@code target}, read-only when asked. */
    void setBindFlags(Path target, boolean readOnly, List<String> options);

    /**
     * Unmounts {@code mount}, the topmost at its mount point as the caller just read the table,
     * and checks the table that it is gone; returns what is still mounted there, read afresh. A
     * busy mount is an error, never success. {@code corrupted} allows a lazy unmount as a last
     * resort for a mount whose device has vanished (nothing can be flushed to it any more).
     */
    List<MountInfo> unmount(MountInfo mount, boolean corrupted);

    /**
     * {@link #unmount} of the topmost of {@code stack}, every mount at one mount point as the
     * caller just read the table. When that mount is the only one and umount2 takes it, nothing is
     * left there: the table need not be read again to say so.
     */
    default List<MountInfo> unmountTop(List<MountInfo> stack, boolean corrupted) {
        return unmount(stack.getLast(), corrupted);
    }
}
