package dev.blockpool.host;

import dev.blockpool.common.FilesystemAnswer;
import dev.blockpool.common.FsType;
import dev.blockpool.common.HealthProblem;
import dev.blockpool.host.filesystems.Filesystems;
import dev.blockpool.host.loops.LoopAttachments;
import dev.blockpool.host.loops.LoopDevice;
import dev.blockpool.host.mounts.MountInfo;
import dev.blockpool.host.mounts.MountOwner;
import dev.blockpool.host.mounts.MountTable;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * NodeGetVolumeHealth on the host: what is wrong with a volume where this node uses it, from the
 * mount table and loop sysfs as they are now. Every mount of the image through its loop
 * devices is looked at, and the paths the caller names, which may still show a mount whose
 * device has gone; the filesystem on each device is asked, with a deadline, whether it answers,
 * and ext4's error record in sysfs is read.
 */
public final class MountHealth {

    private final LoopAttachments loops;
    private final MountTable table;
    private final Filesystems filesystems;

    public MountHealth(LoopAttachments loops, MountTable table, Filesystems filesystems) {
        this.loops = loops;
        this.table = table;
        this.filesystems = filesystems;
    }

    /** The problems of the image's mounts and of those at {@code paths}; empty when none is known. */
    public List<HealthProblem> problems(Path image, List<Path> paths) {
        Set<MountInfo> mounts = new LinkedHashSet<>(loops.usersOf(image));
        paths.forEach(path -> table.at(path).ifPresent(mounts::add));
        List<HealthProblem> problems = new ArrayList<>();
        Set<Path> checked = new HashSet<>();
        for (MountInfo mount : mounts) {
            // one look at the device: a concurrent unstage may detach it between two
            Optional<LoopDevice> device = loops.loopOf(mount);
            MountOwner owner = loops.ownerOf(mount, image, device);
            if (owner == MountOwner.OTHER) {
                continue;
            }
            boolean gone = owner == MountOwner.BROKEN
                    || device.isEmpty()
                    || (!device.get().backingFileDeleted() && device.get().autoclear());
            if (gone && !stillMounted(mount)) {
                continue; // unmounted since the table was read (an unpublish, which releases its device)
            }
            if (owner == MountOwner.BROKEN || device.isEmpty()) {
                problems.add(HealthProblem.inaccessible(
                        "LoopDeviceDetached", "the loop device behind " + mount.mountPoint() + " is gone"));
                continue;
            }
            LoopDevice loop = device.get();
            if (loop.backingFileDeleted()) {
                problems.add(HealthProblem.dataLoss(
                        "ImageDeleted",
                        "the image " + image + " was deleted while " + loop.device() + " at " + mount.mountPoint()
                                + " still uses it"));
            } else if (loop.autoclear()) {
                problems.add(HealthProblem.inaccessible(
                        "LoopDeviceDetached", loop.device() + " was detached while in use at " + mount.mountPoint()));
            }
            // A device's filesystem is the same at each of its mounts (staging, the pods' binds): asked once.
            if (FsType.find(mount.fsType()).isPresent() && checked.add(loop.device())) {
                problems.addAll(filesystem(mount, loop));
            }
        }
        return problems;
    }

    /**
     * Whether the mount is still where the table listed it: an unpublish of a read-only raw block
     * target unmounts it and then detaches its own read-only device, so a device found gone or
     * going behind a mount read before is only a problem while that mount is there.
     */
    private boolean stillMounted(MountInfo mount) {
        return table.allAt(mount.mountPoint()).stream()
                .anyMatch(m -> m.mountId() == mount.mountId() && m.device().equals(mount.device()));
    }

    private List<HealthProblem> filesystem(MountInfo mount, LoopDevice loop) {
        String what = "the " + mount.fsType() + " filesystem on " + loop.device() + " at " + mount.mountPoint();
        List<HealthProblem> problems = new ArrayList<>();
        switch (filesystems.answer(mount.mountPoint())) {
            case FilesystemAnswer.Answered answered -> {}
            case FilesystemAnswer.Silent silent ->
                problems.add(HealthProblem.inaccessible(
                        "FilesystemNotResponding",
                        what + " " + silent.describe()
                                + ": its I/O waits on the pool's storage; see the pool's health"));
            case FilesystemAnswer.Failed failed ->
                problems.add(HealthProblem.inaccessible(
                        "FilesystemFailed",
                        what + " fails with \"" + failed.error()
                                + "\": the kernel stopped it after an error (xfs shuts a "
                                + "filesystem down so; see the kernel log). Once no pod uses the volume, NodeUnstageVolume and "
                                + "NodeStageVolume mount it again, which replays its log; if that fails, repair the image "
                                + "(xfs_repair)"));
        }
        filesystems
                .recordedErrors(loop)
                .ifPresent(
                        errors -> problems.add(
                                HealthProblem.degraded(
                                        "FilesystemErrors",
                                        "the kernel recorded " + errors.count() + " error(s) in " + what
                                                + errors.first()
                                                        .map(t -> ", the first at " + t)
                                                        .orElse("")
                                                + (errors.function().isEmpty() ? "" : " in " + errors.function())
                                                + ": its data may be damaged. Once no pod uses the volume, its next NodeStageVolume checks and repairs "
                                                + "it (e2fsck -p) before mounting it, or fails if it needs a manual repair (e2fsck on the image)")));
        return problems;
    }
}
