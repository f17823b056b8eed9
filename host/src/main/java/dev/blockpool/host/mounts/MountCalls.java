package dev.blockpool.host.mounts;

import java.nio.file.Path;

/**
 * The kernel's mount calls, made on the object that is at a path when the call opens it, never
 * through a symlink: what {@link HostMounter} decides is done here. An interface, so the
 * decisions can be unit-tested without mounting anything.
 */
interface MountCalls {

    /** What a mount may be made on: a directory, or a regular file for a device node's bind. */
    enum TargetKind {
        DIRECTORY,
        FILE
    }

    /**
     * mount(2) of {@code source} onto the {@code kind} at {@code target}, with {@code flags}
     * (MS_BIND for a bind) and filesystem {@code data}; a null type or data is none. A target
     * that is a symlink, or is not of {@code kind}, is refused; so is one whose parents change
     * into symlinks while it is opened.
     */
    void mount(String source, Path target, TargetKind kind, String type, long flags, String data);

    /**
     * Whether {@link #bindWithFlags} can make a bind with its flags in one step: the kernel has
     * the new mount API (open_tree, mount_setattr and move_mount; Linux 5.12).
     */
    boolean atomicBinds();

    /**
     * A bind of {@code source} onto the {@code kind} at {@code target} that is mounted with its
     * per-mount {@code flags} (MS_RDONLY, MS_NOSUID, ...) from the start: a copy of the source's
     * mount is made detached, given its flags, and only then attached, so no caller, and no kill
     * between the steps, ever sees the bind without them. Only where {@link #atomicBinds}.
     */
    void bindWithFlags(String source, Path target, TargetKind kind, long flags);

    /** Changes the per-mount flags of the bind mount at {@code target}. */
    void remountBind(Path target, TargetKind kind, long flags);

    /** umount2(2) without following a symlink; returns 0 or errno. */
    int unmount(Path target, boolean detach);
}
