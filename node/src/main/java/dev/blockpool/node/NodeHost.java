package dev.blockpool.node;

import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.CsiException;
import dev.blockpool.node.host.HostFilesystems;
import dev.blockpool.node.host.HostLoopDevices;
import dev.blockpool.node.host.HostMounter;
import dev.blockpool.node.host.ProcMountTable;
import dev.blockpool.node.host.DeviceNumber;
import dev.blockpool.node.host.Filesystems;
import dev.blockpool.node.host.FsStats;
import dev.blockpool.node.host.FsType;
import dev.blockpool.node.host.LoopDevice;
import dev.blockpool.node.host.LoopDevices;
import dev.blockpool.node.host.LoopSysfs;
import dev.blockpool.node.host.MountInfo;
import dev.blockpool.node.host.MountTable;
import dev.blockpool.node.host.Mounter;
import dev.blockpool.node.host.PathState;
import dev.blockpool.node.host.Probe;
import java.io.IOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's work on the host, knowing nothing of gRPC: attach, format, mount, bind, unmount,
 * detach, measure and grow one volume's image. Every decision is taken from the live mount
 * table and loop sysfs, so a restarted driver continues exactly where the host is.
 */
public final class NodeHost {

    private static final Logger log = LoggerFactory.getLogger(NodeHost.class);
    private static final int LOOP_MAJOR = 7;

    private final MountTable table;
    private final LoopDevices loops;
    private final Filesystems filesystems;
    private final Mounter mounter;

    public NodeHost(MountTable table, LoopDevices loops, Filesystems filesystems, Mounter mounter) {
        this.table = table;
        this.loops = loops;
        this.filesystems = filesystems;
        this.mounter = mounter;
    }

    /** The host side on this machine: mount(8), losetup(8), blkid, mkfs, fsck and the resize tools. */
    public static NodeHost onThisHost(CommandRunner runner) {
        MountTable table = new ProcMountTable();
        return new NodeHost(table, new HostLoopDevices(runner), new HostFilesystems(runner),
                new HostMounter(runner, table));
    }

    /** Whose is a mount: this volume's image, something else, or a device that has vanished. */
    enum Owner { THIS_VOLUME, OTHER, BROKEN }

    /** How a volume is mounted: its filesystem type (requested, or whatever it already has) and flags. */
    public record FilesystemRequest(Optional<FsType> requestedType, FsType defaultType, List<String> options,
                                    boolean readOnly) {
        public FilesystemRequest {
            options = List.copyOf(options);
        }
    }

    /** Usage and health of a volume at a path; usage is empty when it cannot be measured. */
    public record Usage(Optional<FsStats> filesystem, Optional<Long> blockBytes, boolean abnormal, String message) {
    }

    // ---- stage ---------------------------------------------------------------------------

    public void stageBlock(Path image, boolean readOnly) {
        acquireLoop(image, readOnly);
    }

    public void stageFilesystem(Path image, Path staging, FilesystemRequest request) {
        Optional<MountInfo> existing = table.at(staging);
        if (existing.isPresent()) {
            requireSameFilesystemMount(existing.get(), image, staging, request);
            return;
        }
        createDirectory(staging);
        mountFresh(image, staging, request, false);
    }

    public void unstage(Path image, Path staging) {
        Optional<MountInfo> mount = table.at(staging);
        if (mount.isPresent()) {
            Owner owner = ownerOf(mount.get(), image);
            if (owner == Owner.OTHER) {
                // Another volume at the path. Stage and publish answer ALREADY_EXISTS, as the spec
                // asks; it names no code for this case in a teardown, where ALREADY_EXISTS would
                // make no sense. FAILED_PRECONDITION: the caller's view of the node is wrong, and
                // nothing was touched. Unpublish answers the same.
                throw CsiException.failedPrecondition("%s holds another filesystem, not this volume's", staging);
            }
            if (owner == Owner.THIS_VOLUME) {
                List<Path> published = table.ofDevice(mount.get().device()).stream().map(MountInfo::mountPoint)
                        .filter(p -> !p.equals(mount.get().mountPoint())).toList();
                if (!published.isEmpty()) {
                    throw CsiException.failedPrecondition("the volume is still published at %s; unpublish it first",
                            published);
                }
            }
            mounter.unmount(staging, owner == Owner.BROKEN || PathState.of(staging) instanceof PathState.Broken);
        }
        releaseLoops(image);
    }

    // ---- publish -------------------------------------------------------------------------

    public void publishFilesystem(Path image, Path staging, Path target, boolean readOnly, List<String> options,
                                  boolean singleWriter) {
        MountInfo staged = table.at(staging).filter(m -> ownerOf(m, image) == Owner.THIS_VOLUME)
                .orElseThrow(() -> CsiException.failedPrecondition(
                        "the volume is not staged at %s; call NodeStageVolume first", staging));
        FsType.find(staged.fsType()).ifPresent(type -> MountOptions.requireAllowedFor(options, type));
        Optional<MountInfo> existing = table.at(target);
        if (existing.isPresent()) {
            MountInfo m = existing.get();
            if (!m.device().equals(staged.device())) {
                throw CsiException.alreadyExists("%s already has another filesystem mounted", target);
            }
            requireSameReadOnly(m, readOnly, target);
            return;
        }
        if (singleWriter) {
            requireNoOtherPublish(table.ofDevice(staged.device()), List.of(staging, target));
        }
        createDirectory(target);
        // Filesystem flags took effect at stage; a bind takes only per-mount ones.
        mounter.bind(staging, target, readOnly, MountOptions.forBind(options));
    }

    /**
     * Binds the volume's device node onto a file at the target. A read-only bind does not stop
     * writes through a device node (the mount's flag covers the inode, not the device behind
     * it), so a read-only publish of a read-write staged volume gets a read-only loop device of
     * its own, which the kernel refuses to write; unpublish detaches it again.
     */
    public void publishBlock(Path image, Path target, boolean readOnly, boolean singleWriter) {
        LoopDevice staged = loops.reusableFor(image).orElseThrow(() -> CsiException.failedPrecondition(
                "the volume has no loop device on this node; call NodeStageVolume first"));
        Optional<MountInfo> existing = table.at(target);
        if (existing.isPresent()) {
            Optional<LoopDevice> bound = loopOf(existing.get())
                    .filter(l -> l.backingFile().equals(LoopSysfs.canonical(image)));
            if (bound.isEmpty()) {
                throw CsiException.alreadyExists("%s already has another device or filesystem mounted", target);
            }
            requireSameReadOnly(existing.get(), readOnly, target);
            if (readOnly && !bound.get().readOnly()) {
                throw CsiException.alreadyExists("%s is a writable device of the volume, not a read-only one", target);
            }
            return;
        }
        if (!readOnly && staged.readOnly()) {
            throw CsiException.failedPrecondition(
                    "the volume is staged read-only on this node (%s); a read-write publish is refused", staged.device());
        }
        if (singleWriter) {
            requireNoOtherPublish(loops.boundTo(image).stream().flatMap(l -> usersOf(l).stream()).toList(),
                    List.of(target));
        }
        createFile(target);
        if (!readOnly || staged.readOnly()) {
            mounter.bind(staged.device(), target, readOnly, List.of());
            return;
        }
        LoopDevice own = loops.attach(image, true);
        log.info("attached {} read-only to {} for the read-only publish at {}", image, own.device(), target);
        try {
            mounter.bind(own.device(), target, true, List.of());
        } catch (RuntimeException e) {
            try {
                if (usersOf(own).isEmpty()) {
                    loops.detach(own);
                }
            } catch (RuntimeException cleanup) {
                e.addSuppressed(cleanup);
            }
            throw e;
        }
    }

    /**
     * An ephemeral inline volume: no staging, its filesystem is mounted straight at the target.
     * The volume is new and empty, so it is formatted on a read-write device even when the pod
     * is to see it read-only; only the mount is read-only then.
     */
    public void publishEphemeral(Path image, Path target, FilesystemRequest request) {
        Optional<MountInfo> existing = table.at(target);
        if (existing.isPresent()) {
            requireSameFilesystemMount(existing.get(), image, target, request);
            return;
        }
        createDirectory(target);
        mountFresh(image, target, request, true);
    }

    /** Unmounts the target if this volume is there, and removes it; a target already gone is fine. */
    public void unpublish(Path image, Path target) {
        PathState state = PathState.of(target);
        if (state instanceof PathState.Missing) {
            return;
        }
        List<LoopDevice> unbound = new ArrayList<>();
        for (Optional<MountInfo> mount = table.at(target); mount.isPresent(); mount = table.at(target)) {
            Owner owner = ownerOf(mount.get(), image);
            if (owner == Owner.OTHER) { // FAILED_PRECONDITION, not ALREADY_EXISTS: see unstage
                throw CsiException.failedPrecondition("%s holds another volume or filesystem, not this volume", target);
            }
            if (owner == Owner.THIS_VOLUME && mount.get().root().matches("/loop[0-9]+")) {
                loopOf(mount.get()).ifPresent(unbound::add);
            }
            mounter.unmount(target, owner == Owner.BROKEN || PathState.of(target) instanceof PathState.Broken);
        }
        try {
            Files.deleteIfExists(target);
        } catch (DirectoryNotEmptyException e) {
            throw CsiException.failedPrecondition(
                    "%s is unmounted but not empty: something wrote into the directory itself; it is kept", target);
        } catch (IOException e) {
            throw CsiException.internal(e, "cannot remove %s: %s", target, e.getMessage());
        }
        unbound.forEach(device -> releaseReadOnlyPublishDevice(image, device));
    }

    /**
     * Detaches the device a read-only block publish attached for itself once nothing binds it:
     * a read-only device of an image that also has a read-write one (the staged device, which
     * stays until unstage).
     */
    private void releaseReadOnlyPublishDevice(Path image, LoopDevice device) {
        Optional<LoopDevice> staged = loops.reusableFor(image);
        Optional<LoopDevice> current = loops.byNumber(device.number())
                .filter(l -> l.name().equals(device.name()) && l.backingFile().equals(device.backingFile()));
        if (current.isEmpty() || !current.get().readOnly() || current.get().autoclear() || staged.isEmpty()
                || staged.get().readOnly() || staged.get().name().equals(device.name())
                || !usersOf(current.get()).isEmpty()) {
            return;
        }
        loops.detach(current.get());
    }

    /**
     * Detaches the image's loop devices when nothing mounts or binds any of them, and says
     * whether it did; a device in use leaves every device of the image as it is.
     */
    public boolean releaseLoopsIfUnused(Path image) {
        if (loops.boundTo(image).stream().anyMatch(loop -> !usersOf(loop).isEmpty())) {
            return false;
        }
        releaseLoops(image);
        return true;
    }

    /** Detaches the image's loop devices once nothing mounts them. */
    public void releaseLoops(Path image) {
        for (LoopDevice loop : loops.boundTo(image)) {
            List<Path> users = usersOf(loop).stream().map(MountInfo::mountPoint).toList();
            if (!users.isEmpty()) {
                throw CsiException.failedPrecondition("%s of this volume is still mounted at %s", loop.device(), users);
            }
            loops.detach(loop);
        }
    }

    // ---- stats and expansion -------------------------------------------------------------

    public Optional<Usage> usage(Path image, Path path) {
        PathState state = PathState.of(path);
        Optional<MountInfo> mount = table.at(path);
        if (state instanceof PathState.Missing || mount.isEmpty()) {
            return Optional.empty();
        }
        // One look at the device: a concurrent unstage may detach it between two.
        Optional<LoopDevice> device = loopOf(mount.get());
        Owner owner = ownerOf(mount.get(), image, device);
        if (owner == Owner.OTHER) {
            return Optional.empty();
        }
        if (owner == Owner.BROKEN || device.isEmpty()) {
            return Optional.of(new Usage(Optional.empty(), Optional.empty(), true,
                    "the loop device behind %s is gone".formatted(path)));
        }
        if (state instanceof PathState.Broken broken) {
            return Optional.of(new Usage(Optional.empty(), Optional.empty(), true,
                    "%s cannot be read: %s".formatted(path, broken.reason())));
        }
        LoopDevice loop = device.get();
        String problem = loop.autoclear() ? "%s was detached while in use".formatted(loop.device())
                : loop.backingFileDeleted() ? "the image %s was deleted while in use".formatted(image)
                : !Files.exists(image) ? "the image %s is missing".formatted(image) : "";
        boolean abnormal = !problem.isEmpty();
        String message = abnormal ? problem : "healthy";
        if (state instanceof PathState.File) {
            return Optional.of(new Usage(Optional.empty(), Optional.of(loop.sizeBytes()), abnormal, message));
        }
        return Optional.of(new Usage(Optional.of(filesystems.stats(path)), Optional.empty(), abnormal, message));
    }

    /**
     * Refreshes the size of the volume's loop devices from its grown image and, when
     * {@code path} is a filesystem mount of the volume, grows the filesystem online. A block
     * target only needs the device refreshed. Any other path is NOT_FOUND: the filesystem of a
     * volume that is not mounted is never grown here (xfs grows only while mounted, and a
     * private mount elsewhere would outlive a crash); kubelet expands it after the next stage.
     * Returns the size of the device behind {@code path}.
     */
    public long expand(Path image, Path path, boolean block) {
        MountInfo mount = table.at(path).filter(m -> ownerOf(m, image) == Owner.THIS_VOLUME)
                .orElseThrow(() -> CsiException.notFound(
                        "the volume is not mounted at %s: volume_path must be a mount or a block target of it", path));
        LoopDevice mounted = loopOf(mount).orElseThrow(() -> CsiException.notFound(
                "the loop device behind %s went away", path));
        if (mounted.autoclear() || mounted.backingFileDeleted()) {
            throw CsiException.failedPrecondition("%s behind %s was detached or lost its image while in use",
                    mounted.device(), path);
        }
        LoopDevice refreshed = mounted;
        for (LoopDevice loop : loops.boundTo(image)) { // the staged device and those of read-only block publishes
            if (!loop.autoclear() && !loop.backingFileDeleted()) {
                LoopDevice after = loops.refreshCapacity(loop);
                if (loop.name().equals(mounted.name())) {
                    refreshed = after;
                }
            }
        }
        if (block || PathState.of(path) instanceof PathState.File) {
            return refreshed.sizeBytes();
        }
        FsType type = FsType.find(mount.fsType()).orElseThrow(() -> CsiException.failedPrecondition(
                "cannot grow a %s filesystem", mount.fsType()));
        filesystems.growMounted(refreshed.device(), path, type);
        return refreshed.sizeBytes();
    }

    public boolean isMountPoint(Path path) {
        return table.at(path).isPresent();
    }

    // ---- helpers -------------------------------------------------------------------------

    /**
     * Attaches (or reuses) the image's device, prepares its filesystem and mounts it. With
     * {@code writableDevice} the device is attached read-write and an empty one is formatted
     * even for a read-only mount.
     */
    private void mountFresh(Path image, Path mountPoint, FilesystemRequest request, boolean writableDevice) {
        boolean readOnlyDevice = request.readOnly() && !writableDevice;
        boolean attached = loops.reusableFor(image).isEmpty();
        LoopDevice loop = acquireLoop(image, readOnlyDevice);
        try {
            FsType type = prepareFilesystem(loop, request, readOnlyDevice);
            MountOptions.requireAllowedFor(request.options(), type);
            // Capability.filesystem() strips ro/rw from the flags: read-only is request.readOnly() alone.
            List<String> options = request.readOnly() ? concat(request.options(), "ro") : request.options();
            mounter.mount(loop.device(), mountPoint, type, options);
        } catch (RuntimeException e) {
            if (attached && usersOf(loop).isEmpty()) {
                try {
                    loops.detach(loop);
                } catch (RuntimeException cleanup) {
                    e.addSuppressed(cleanup);
                }
            }
            throw e;
        }
    }

    /** Formats an empty device, checks a formatted one before a read-write mount; returns its type. */
    private FsType prepareFilesystem(LoopDevice loop, FilesystemRequest request, boolean readOnlyDevice) {
        Probe probe = filesystems.probe(loop.device());
        if (probe.empty()) {
            if (readOnlyDevice) {
                throw CsiException.failedPrecondition(
                        "the volume has no filesystem yet and is to be mounted read-only, so it cannot be formatted");
            }
            FsType type = request.requestedType().orElse(request.defaultType());
            log.info("formatting {} ({}) as {}", loop.device(), loop.backingFile(), type);
            filesystems.format(loop.device(), type);
            return type;
        }
        Optional<FsType> found = probe.partitionTable().isPresent() ? Optional.empty()
                : probe.type().flatMap(FsType::find);
        if (found.isEmpty()) {
            throw CsiException.failedPrecondition("the volume holds %s, not an ext4 or xfs filesystem; it is left as it is",
                    probe.describe());
        }
        if (request.requestedType().isPresent() && request.requestedType().get() != found.get()) {
            throw CsiException.failedPrecondition("the volume holds an %s filesystem, but %s was requested",
                    found.get(), request.requestedType().get());
        }
        // Never fsck a filesystem that is mounted (somewhere else on this node): e2fsck would
        // repair it under the kernel's feet.
        if (!readOnlyDevice && usersOf(loop).isEmpty()) {
            filesystems.check(loop.device(), found.get());
        }
        return found.get();
    }

    private LoopDevice acquireLoop(Path image, boolean readOnly) {
        Optional<LoopDevice> existing = loops.reusableFor(image);
        if (existing.isPresent()) {
            if (existing.get().readOnly() && !readOnly) {
                throw CsiException.failedPrecondition(
                        "the volume is attached read-only on this node (%s), a read-write use is refused",
                        existing.get().device());
            }
            return existing.get();
        }
        if (!Files.isRegularFile(image)) {
            throw CsiException.notFound("the image of the volume is missing from the pool: %s", image);
        }
        List<LoopDevice> leaving = loops.boundTo(image);
        if (!leaving.isEmpty()) {
            // A second device on the same image would let two filesystem instances write it.
            throw CsiException.failedPrecondition(
                    "the image is still bound to %s, which was detached while in use and goes away once released",
                    leaving.stream().map(LoopDevice::device).toList());
        }
        LoopDevice loop = loops.attach(image, readOnly);
        log.info("attached {} to {}", image, loop.device());
        return loop;
    }

    private void requireSameFilesystemMount(MountInfo mount, Path image, Path path, FilesystemRequest request) {
        Owner owner = ownerOf(mount, image);
        if (owner != Owner.THIS_VOLUME) {
            throw CsiException.alreadyExists("%s already has %s mounted", path,
                    owner == Owner.BROKEN ? "a broken mount" : "another filesystem");
        }
        if (request.requestedType().isPresent() && !request.requestedType().get().fsName().equals(mount.fsType())) {
            throw CsiException.alreadyExists("the volume is mounted at %s as %s, not %s", path, mount.fsType(),
                    request.requestedType().get());
        }
        requireSameReadOnly(mount, request.readOnly(), path);
    }

    private static void requireSameReadOnly(MountInfo mount, boolean readOnly, Path path) {
        if (mount.readOnly() != readOnly) {
            throw CsiException.alreadyExists("the volume is mounted at %s %s, not %s as requested", path,
                    mount.readOnly() ? "read-only" : "read-write", readOnly ? "read-only" : "read-write");
        }
    }

    private static void requireNoOtherPublish(List<MountInfo> mounts, List<Path> allowed) {
        List<Path> others = mounts.stream().map(MountInfo::mountPoint).filter(p -> !allowed.contains(p)).toList();
        if (!others.isEmpty()) {
            throw CsiException.failedPrecondition(
                    "the volume is SINGLE_NODE_SINGLE_WRITER and already published at %s", others);
        }
    }

    Owner ownerOf(MountInfo mount, Path image) {
        return ownerOf(mount, image, loopOf(mount));
    }

    private static Owner ownerOf(MountInfo mount, Path image, Optional<LoopDevice> loop) {
        if (loop.isPresent()) {
            return loop.get().backingFile().equals(LoopSysfs.canonical(image)) ? Owner.THIS_VOLUME : Owner.OTHER;
        }
        boolean loopDeviceNode = mount.root().matches("/loop[0-9]+") && !mount.fsType().startsWith("ext")
                && !mount.fsType().equals("xfs");
        return mount.device().major() == LOOP_MAJOR || loopDeviceNode ? Owner.BROKEN : Owner.OTHER;
    }

    /** The loop device behind a mount: a filesystem on it, or its device node bound somewhere. */
    private Optional<LoopDevice> loopOf(MountInfo mount) {
        Optional<LoopDevice> byNumber = loops.byNumber(mount.device());
        if (byNumber.isPresent()) {
            return byNumber;
        }
        if (mount.root().matches("/loop[0-9]+")) {
            String name = mount.root().substring(1);
            return loops.list().stream().filter(l -> l.name().equals(name) && sameDeviceFilesystem(l, mount))
                    .findFirst();
        }
        return Optional.empty();
    }

    /** Every mount that uses the loop device: its filesystem, or binds of its device node. */
    private List<MountInfo> usersOf(LoopDevice loop) {
        return table.mounts().stream()
                .filter(m -> m.device().equals(loop.number())
                        || (m.root().equals("/" + loop.name()) && sameDeviceFilesystem(loop, m)))
                .toList();
    }

    private static boolean sameDeviceFilesystem(LoopDevice loop, MountInfo mount) {
        try {
            long dev = (Long) Files.getAttribute(loop.device(), "unix:dev");
            return DeviceNumber.fromDevT(dev).equals(mount.device());
        } catch (IOException | UnsupportedOperationException e) {
            return false;
        }
    }

    private static void createDirectory(Path path) {
        try {
            Files.createDirectories(path);
        } catch (IOException e) {
            throw CsiException.internal(e, "cannot create the directory %s: %s", path, e.getMessage());
        }
    }

    private static void createFile(Path path) {
        PathState state = PathState.of(path);
        if (state instanceof PathState.File) {
            return;
        }
        if (!(state instanceof PathState.Missing)) {
            throw CsiException.alreadyExists("%s exists and is not a file; a block volume is published onto a file",
                    path);
        }
        try {
            Files.createDirectories(path.getParent());
            Files.createFile(path);
        } catch (IOException e) {
            throw CsiException.internal(e, "cannot create the file %s: %s", path, e.getMessage());
        }
    }

    private static List<String> concat(List<String> list, String item) {
        return java.util.stream.Stream.concat(list.stream(), java.util.stream.Stream.of(item)).toList();
    }
}
