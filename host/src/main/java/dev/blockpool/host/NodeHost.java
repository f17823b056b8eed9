package dev.blockpool.host;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.Libc;
import dev.blockpool.host.cgroups.LinuxPodCgroupCalls;
import dev.blockpool.host.cgroups.PodCgroupCalls;
import dev.blockpool.host.filesystems.Filesystems;
import dev.blockpool.host.filesystems.HostFilesystems;
import dev.blockpool.host.filesystems.JournalCheckpoints;
import dev.blockpool.host.filesystems.SafeFormatAndMount;
import dev.blockpool.host.loops.HostLoopDevices;
import dev.blockpool.host.loops.LoopAttachments;
import dev.blockpool.host.loops.LoopDevices;
import dev.blockpool.host.loops.LoopSysfs;
import dev.blockpool.host.mounts.HostMounter;
import dev.blockpool.host.mounts.MountTable;
import dev.blockpool.host.mounts.Mounter;
import dev.blockpool.host.mounts.ProcMountTable;
import java.nio.file.Path;

/**
 * The node's work on the host, knowing nothing of gRPC, as the node service uses it: staging,
 * publishing, stats and growth over the loop devices of the volumes, and the I/O limits of the
 * pods they are published to. Every decision is taken
 * from the live mount table and loop sysfs, so a restarted driver continues exactly where the
 * host is.
 */
public record NodeHost(
        Staging staging,
        Publishing publishing,
        VolumeStats stats,
        MountHealth health,
        VolumeResizer resizer,
        LoopAttachments loops,
        JournalCheckpoints journals,
        VolumeThrottles throttles) {

    /** The host side over the given primitives (fakes in unit tests). */
    public static NodeHost of(
            MountTable table,
            LoopDevices loopDevices,
            Filesystems filesystems,
            Mounter mounter,
            PodCgroupCalls cgroups) {
        return of(table, loopDevices, filesystems, mounter, cgroups, new BlockingCalls());
    }

    private static NodeHost of(
            MountTable table,
            LoopDevices loopDevices,
            Filesystems filesystems,
            Mounter mounter,
            PodCgroupCalls cgroups,
            BlockingCalls blocking) {
        LoopAttachments loops = new LoopAttachments(loopDevices, table);
        SafeFormatAndMount formatAndMount = new SafeFormatAndMount(loops, filesystems, mounter, table);
        return new NodeHost(
                new Staging(loops, formatAndMount, mounter, table),
                new Publishing(loops, formatAndMount, mounter, table),
                new VolumeStats(loops, filesystems, table),
                new MountHealth(loops, table, filesystems),
                new VolumeResizer(loops, filesystems, table),
                loops,
                new JournalCheckpoints(loops, blocking),
                new VolumeThrottles(loops, cgroups));
    }

    /**
     * The host side on this machine: blkid, mkfs, fsck and the resize tools as child processes;
     * loop devices, mounts and statfs as system calls, each on a thread of one {@link BlockingCalls}.
     */
    public static NodeHost onThisHost(CommandRunner runner, BlockingCalls blocking) {
        return onThisHost(runner, blocking, LinuxPodCgroupCalls.HOST_ROOT);
    }

    /** As {@link #onThisHost(CommandRunner, BlockingCalls)}, with the host's cgroup filesystems at {@code cgroupRoot}. */
    public static NodeHost onThisHost(CommandRunner runner, BlockingCalls blocking, Path cgroupRoot) {
        MountTable table = new ProcMountTable();
        LoopDevices loops = new HostLoopDevices(blocking);
        return of(
                table,
                loops,
                new HostFilesystems(runner, blocking),
                new HostMounter(blocking, table),
                new LinuxPodCgroupCalls(cgroupRoot),
                blocking);
    }

    /**
     * Makes the first system calls and reads of this host once, in the background: the first
     * call of each C function binds it and the first read of the mount table and loop sysfs loads
     * their readers, which would otherwise fall on the first requests the node serves
     * (docs/performance-node.md, "The first calls after a start"). The driver calls it once it serves,
     * so that its start does not share the CPU with this. Only reads and calls that fail
     * harmlessly; what they find is read afresh by every call. Returns its thread, for a stopping
     * driver to wait for.
     */
    public static Thread prepareInBackground() {
        return Thread.ofPlatform().daemon().name("node-host-prepare").start(() -> {
            try {
                Libc.prepare();
                HostMounter.prepareCalls();
                HostLoopDevices.prepareCalls();
                new ProcMountTable().mounts();
                LoopSysfs.onThisHost(new BlockingCalls("node-host-prepare", 1)).list();
            } catch (RuntimeException e) {
                // a real call meets the same failure and reports it
            }
        });
    }
}
