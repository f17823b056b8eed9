package dev.blockpool.host;

import dev.blockpool.common.FsType;
import dev.blockpool.common.MountOptions;
import dev.blockpool.common.StorageException;
import dev.blockpool.common.TestKillPoint;
import dev.blockpool.host.filesystems.FilesystemRequest;
import dev.blockpool.host.filesystems.SafeFormatAndMount;
import dev.blockpool.host.loops.LoopAttachments;
import dev.blockpool.host.loops.LoopDevice;
import dev.blockpool.host.mounts.MountInfo;
import dev.blockpool.host.mounts.MountOwner;
import dev.blockpool.host.mounts.MountPoints;
import dev.blockpool.host.mounts.MountTable;
import dev.blockpool.host.mounts.Mounter;
import dev.blockpool.host.mounts.PathState;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * NodePublish and NodeUnpublish on the host: a staged filesystem is bind-mounted into the pod's
 * target directory, a block volume's device node is bound onto a target file, and an inline
 * volume's filesystem is mounted straight at its target.
 */
public final class Publishing {

    private static final Logger log = LoggerFactory.getLogger(Publishing.class);

    private final LoopAttachments loops;
    private final SafeFormatAndMount formatAndMount;
    private final Mounter mounter;
    private final MountTable table;

    public Publishing(LoopAttachments loops, SafeFormatAndMount formatAndMount, Mounter mounter, MountTable table) {
        this.loops = loops;
        this.formatAndMount = formatAndMount;
        this.mounter = mounter;
        this.table = table;
    }

    public void publishFilesystem(
            Path image, Path staging, Path target, boolean readOnly, List<String> flags, boolean singleWriter) {
        List<MountInfo> here = table.allAt(staging, target); // one read of the table for both
        MountInfo staged = MountTable.topmost(here, staging)
                .filter(m -> loops.ownerOf(m, image) == MountOwner.THIS_VOLUME)
                .orElseThrow(() -> StorageException.precondition(
                        "the volume is not staged at %s; call NodeStageVolume first", staging));
        FsType.find(staged.fsType()).ifPresent(type -> MountOptions.requireAllowedFor(flags, type));
        Optional<MountInfo> existing = MountTable.topmost(here, target);
        if (existing.isPresent()) {
            if (!existing.get().device().equals(staged.device())) {
                throw StorageException.conflict("%s already has another filesystem mounted", target);
            }
            requireOrRepairBind(existing.get(), target, readOnly, MountOptions.forBind(flags));
            return;
        }
        if (singleWriter) {
            requireNoOtherPublish(table.ofDevice(staged.device()), List.of(staging, target));
        }
        MountPoints.createDirectory(target);
        // Filesystem flags took effect at stage; a bind takes only per-mount ones.
        mounter.bind(staging, target, readOnly, MountOptions.forBind(flags));
        TestKillPoint.reached("publish.after-bind");
    }

    /**
     * Binds the volume's device node onto a file at the target. A read-only bind does not stop
     * writes through a device node (the mount's flag covers the inode, not the device behind
     * it), so a read-only publish of a read-write staged volume gets a read-only loop device of
     * its own, which the kernel refuses to write; unpublish detaches it again.
     */
    public void publishBlock(Path image, Path target, boolean readOnly, boolean singleWriter) {
        LoopDevice staged = loops.reusable(image)
                .orElseThrow(() -> StorageException.precondition(
                        "the volume has no loop device on this node; call NodeStageVolume first"));
        Optional<MountInfo> existing = table.at(target);
        if (existing.isPresent()) {
            requireSameBlockPublish(existing.get(), image, target, readOnly);
            return;
        }
        if (!readOnly && staged.readOnly()) {
            throw StorageException.precondition(
                    "the volume is staged read-only on this node (%s); a read-write publish is refused",
                    staged.device());
        }
        if (singleWriter) {
            requireNoOtherPublish(loops.usersOf(image), List.of(target));
        }
        MountPoints.createFile(target);
        if (!readOnly || staged.readOnly()) {
            mounter.bind(staged.device(), target, readOnly, List.of());
            return;
        }
        LoopDevice own = loops.attachReadOnlyCopy(image);
        try {
            mounter.bind(own.device(), target, true, List.of());
        } catch (RuntimeException e) {
            loops.detachAfter(e, own);
            throw e;
        }
    }

    /** An ephemeral inline volume: no staging, its filesystem is mounted straight at the target. */
    public void publishInline(Path image, Path target, FilesystemRequest request) {
        formatAndMount.mountInline(image, target, request);
    }

    /** Unmounts the target if this volume is there, and removes what publish made there; a target already gone is fine. */
    public void unpublish(Path image, Path target) {
        if (PathState.of(target) instanceof PathState.Missing) {
            return;
        }
        List<LoopDevice> unbound = new ArrayList<>();
        for (List<MountInfo> stack = table.allAt(target); !stack.isEmpty(); ) {
            MountInfo mount = stack.getLast();
            MountOwner owner = loops.ownerOf(mount, image);
            if (owner == MountOwner.OTHER) { // FAILED_PRECONDITION, not ALREADY_EXISTS: see Staging.unstage
                throw StorageException.precondition("%s holds another volume or filesystem, not this volume", target);
            }
            if (owner == MountOwner.THIS_VOLUME && LoopAttachments.isDeviceNodeBind(mount)) {
                loops.loopOf(mount).ifPresent(unbound::add);
            }
            stack = mounter.unmountTop(
                    stack, owner == MountOwner.BROKEN || PathState.of(target) instanceof PathState.Broken);
        }
        TestKillPoint.reached("unpublish.after-unmount");
        MountPoints.removeUnmounted(target);
        unbound.forEach(device -> loops.releaseReadOnlyCopy(image, device));
    }

    private void requireSameBlockPublish(MountInfo mount, Path image, Path target, boolean readOnly) {
        Optional<LoopDevice> bound = loops.loopOf(mount).filter(l -> loops.isBoundTo(l, image));
        if (bound.isEmpty()) {
            throw StorageException.conflict("%s already has another device or filesystem mounted", target);
        }
        requireOrRepairBind(mount, target, readOnly, List.of());
        if (readOnly && !bound.get().readOnly()) {
            throw StorageException.conflict("%s is a writable device of the volume, not a read-only one", target);
        }
    }

    /**
     * A repeated publish finds the volume's bind at its target. Where a bind and its flags are
     * two steps ({@link Mounter#bindsAtomically}), a kill between them leaves the bind without
     * its flags: read-write where read-only was asked, or without nosuid and the like; the
     * repeat sets them, since no pod was given the target before its publish succeeded. Where
     * they are one step, no bind is ever left without its flags, and a read-write bind where
     * read-only is asked is another publish's: ALREADY_EXISTS.
     */
    private void requireOrRepairBind(MountInfo mount, Path target, boolean readOnly, List<String> options) {
        boolean repairable = !mounter.bindsAtomically() && (readOnly || !mount.readOnly());
        if (repairable && ((readOnly && !mount.readOnly()) || !options.isEmpty())) {
            log.warn(
                    "{} is bound {}: the flags asked ({}) are set now",
                    target,
                    mount.readOnly() ? "read-only" : "read-write",
                    readOnly ? "read-only" + (options.isEmpty() ? "" : ", " + String.join(",", options)) : options);
            mounter.setBindFlags(target, readOnly, options);
            return;
        }
        MountPoints.requireSameReadOnly(mount, readOnly, target);
    }

    private static void requireNoOtherPublish(List<MountInfo> mounts, List<Path> allowed) {
        List<Path> others = mounts.stream()
                .map(MountInfo::mountPoint)
                .filter(p -> !allowed.contains(p))
                .toList();
        if (!others.isEmpty()) {
            throw StorageException.precondition(
                    "the volume is SINGLE_NODE_SINGLE_WRITER and already published at %s", others);
        }
    }
}
