package dev.blockpool.host;

import dev.blockpool.common.FilesystemAnswer;
import dev.blockpool.common.FsType;
import dev.blockpool.common.IoLimits;
import dev.blockpool.common.Libc;
import dev.blockpool.host.cgroups.PodCgroupCalls;
import dev.blockpool.host.filesystems.Filesystems;
import dev.blockpool.host.filesystems.FsStats;
import dev.blockpool.host.filesystems.Probe;
import dev.blockpool.host.loops.FileId;
import dev.blockpool.host.loops.ImageIdentities;
import dev.blockpool.host.loops.LoopDevice;
import dev.blockpool.host.loops.LoopDevices;
import dev.blockpool.host.mounts.DeviceNumber;
import dev.blockpool.host.mounts.MountInfo;
import dev.blockpool.host.mounts.MountTable;
import dev.blockpool.host.mounts.Mounter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * An in-memory host for the node's decision logic: a mount table, loop devices and the
 * filesystems on them, kept consistent with each other, the I/O limits set in pods' cgroups, plus
 * a log of what was done.
 * Device nodes live under {@code devDir}, which does not exist, so nothing real is touched.
 */
public final class FakeHost implements MountTable, LoopDevices, Filesystems, Mounter, PodCgroupCalls {

    public final List<MountInfo> mounts = new ArrayList<>();
    public final Map<String, LoopDevice> loops = new HashMap<>();
    public final Map<Path, Probe> content = new HashMap<>();
    public final List<String> log = new ArrayList<>();
    /** The limits set, by pod UID and device ("uid 7:3"); a pod in {@link #podsWithoutCgroup} has none. */
    public final Map<String, IoLimits> podLimits = new HashMap<>();

    public final Set<String> podsWithoutCgroup = new HashSet<>();
    private final Path devDir;
    private final ImageIdentities images = new ImageIdentities(new dev.blockpool.common.BlockingCalls("fake-host", 2));
    private int nextMountId = 100;

    public FakeHost(Path devDir) {
        this.devDir = devDir;
    }

    public NodeHost nodeHost() {
        return NodeHost.of(this, this, this, this, this);
    }

    @Override
    public List<Path> limit(String podUid, DeviceNumber device, IoLimits limits) {
        if (podsWithoutCgroup.contains(podUid)) {
            return List.of();
        }
        podLimits.put(podUid + " " + device, limits);
        return List.of(Path.of("/fake-cgroup/pod" + podUid));
    }

    @Override
    public List<MountInfo> mounts() {
        return List.copyOf(mounts);
    }

    @Override
    public List<LoopDevice> list() {
        return loops.values().stream()
                .sorted(java.util.Comparator.comparing(LoopDevice::name))
                .toList();
    }

    @Override
    public LoopDevice attach(Path image, boolean readOnly) {
        int n = loops.size();
        while (loops.containsKey("loop" + n)) {
            n++;
        }
        LoopDevice loop = new LoopDevice(
                "loop" + n,
                devDir.resolve("loop" + n),
                new DeviceNumber(7, n),
                image,
                idOf(image),
                readOnly ? Set.of(LoopDevice.Flag.READ_ONLY) : Set.of(),
                sizeOf(image));
        loops.put(loop.name(), loop);
        log.add("attach " + image.getFileName() + (readOnly ? " ro" : ""));
        return loop;
    }

    @Override
    public LoopDevice refreshCapacity(LoopDevice device) {
        log.add("refresh " + device.name());
        LoopDevice l = loops.get(device.name());
        try {
            LoopDevice refreshed = new LoopDevice(
                    l.name(),
                    l.device(),
                    l.number(),
                    l.backingFile(),
                    l.backingFileId(),
                    l.flags(),
                    java.nio.file.Files.size(l.backingFile()));
            loops.put(l.name(), refreshed);
            return refreshed;
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** An image's size, as a new device of it has; 1 GiB for an image the test left empty. */
    private static long sizeOf(Path image) {
        try {
            long size = java.nio.file.Files.size(image);
            return size > 0 ? size : 1L << 30;
        } catch (java.io.IOException e) {
            return 1L << 30;
        }
    }

    /** The real rule, on the test's real image files. */
    @Override
    public boolean isBoundTo(LoopDevice device, Path image) {
        return images.isBoundTo(device, image);
    }

    /** An image the test did not make gets an identity of its own, as a file of a filesystem nobody has. */
    private static FileId idOf(Path image) {
        try {
            return FileId.of(image);
        } catch (java.io.IOException e) {
            return new FileId(new DeviceNumber(0, 0), image.hashCode());
        }
    }

    @Override
    public void detach(LoopDevice device) {
        log.add("detach " + device.name());
        loops.remove(device.name());
    }

    @Override
    public Probe probe(Path device) {
        return content.getOrDefault(device, Probe.EMPTY);
    }

    @Override
    public void format(Path device, FsType type) {
        log.add("format " + device.getFileName() + " " + type);
        filesystemBytes.put(device, deviceBytes(device));
        content.put(device, new Probe(Optional.of(type.fsName()), Optional.of("filesystem"), Optional.empty()));
    }

    @Override
    public void check(Path device, FsType type) {
        log.add("check " + device.getFileName() + " " + type);
    }

    /** Whether the kernel refuses online growth of a mounted ext4, as it does without CAP_SYS_RESOURCE. */
    public boolean ext4OnlineGrowthRefused;
    /** The size of the filesystem on each device, from when it was made or last grown. */
    public final Map<Path, Long> filesystemBytes = new HashMap<>();

    private long deviceBytes(Path device) {
        return loops.values().stream()
                .filter(l -> l.device().equals(device))
                .findFirst()
                .orElseThrow()
                .sizeBytes();
    }

    @Override
    public boolean growMounted(Path device, Path mountPoint, FsType type) {
        if (ext4OnlineGrowthRefused && type == FsType.EXT4) {
            log.add("grow refused " + device.getFileName() + " " + type);
            return false;
        }
        log.add("grow " + device.getFileName() + " " + type);
        filesystemBytes.put(device, deviceBytes(device));
        return true;
    }

    @Override
    public void repairInterruptedGrowth(Path device, Path marker) {}

    @Override
    public boolean growUnmounted(LoopDevice device, FsType type, Path marker) {
        Long size = filesystemBytes.get(device.device());
        if (type != FsType.EXT4 || size == null || size >= device.sizeBytes()) {
            return false;
        }
        log.add("grow unmounted " + device.name() + " " + type);
        filesystemBytes.put(device.device(), device.sizeBytes());
        return true;
    }

    @Override
    public FsStats stats(Path path) {
        return new FsStats(1000, 100, 900, 10, 1, 9);
    }

    /** How each mount point's filesystem answers; an answered statfs where not set. */
    public final Map<Path, FilesystemAnswer> answers = new HashMap<>();
    /** The ext4 error record of each loop device, by name. */
    public final Map<String, RecordedErrors> errors = new HashMap<>();

    @Override
    public FilesystemAnswer answer(Path mountPoint) {
        return answers.getOrDefault(
                mountPoint, new FilesystemAnswer.Answered(new Libc.StatFs(4096, 1000, 900, 900, 100, 90, 0)));
    }

    @Override
    public Optional<RecordedErrors> recordedErrors(LoopDevice device) {
        return Optional.ofNullable(errors.get(device.name()));
    }

    /** When set, the next mount fails with it (and mounts nothing). */
    public RuntimeException mountFailure;

    @Override
    public void mount(Path device, Path target, FsType type, List<String> options) {
        if (mountFailure != null) {
            RuntimeException failure = mountFailure;
            mountFailure = null;
            log.add("mount failed " + device.getFileName());
            throw failure;
        }
        LoopDevice loop = loops.get(device.getFileName().toString());
        log.add("mount " + device.getFileName() + " " + type + " " + options);
        mounts.add(new MountInfo(
                nextMountId++,
                1,
                loop.number(),
                "/",
                target,
                options.contains("ro") ? List.of("ro") : List.of("rw"),
                List.of(),
                type.fsName(),
                device.toString(),
                List.of("rw")));
    }

    @Override
    public void bind(Path source, Path target, boolean readOnly, List<String> options) {
        MountInfo from = at(source).orElseThrow();
        log.add("bind " + target.getFileName() + (readOnly ? " ro" : "") + (options.isEmpty() ? "" : " " + options));
        mounts.add(new MountInfo(
                nextMountId++,
                1,
                from.device(),
                "/",
                target,
                readOnly ? List.of("ro") : List.of("rw"),
                List.of(),
                from.fsType(),
                from.source(),
                List.of("rw")));
    }

    /** Whether a bind and its flags are one step, as with the new mount API; else two, as mount(2) makes them. */
    public boolean atomicBinds = true;

    @Override
    public boolean bindsAtomically() {
        return atomicBinds;
    }

    @Override
    public void setBindFlags(Path target, boolean readOnly, List<String> options) {
        MountInfo bind = at(target).orElseThrow();
        log.add("set flags " + target.getFileName() + (readOnly ? " ro" : "")
                + (options.isEmpty() ? "" : " " + options));
        mounts.set(
                mounts.indexOf(bind),
                new MountInfo(
                        bind.mountId(),
                        bind.parentId(),
                        bind.device(),
                        bind.root(),
                        bind.mountPoint(),
                        readOnly ? List.of("ro") : List.of("rw"),
                        bind.optionalFields(),
                        bind.fsType(),
                        bind.source(),
                        bind.superOptions()));
    }

    @Override
    public List<MountInfo> unmount(MountInfo mount, boolean corrupted) {
        log.add("umount " + mount.mountPoint().getFileName());
        mounts.remove(mount);
        return allAt(mount.mountPoint());
    }
}
