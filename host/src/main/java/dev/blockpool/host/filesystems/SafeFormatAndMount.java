package dev.blockpool.host.filesystems;

import dev.blockpool.common.FsType;
import dev.blockpool.common.GrowthMarker;
import dev.blockpool.common.MountOptions;
import dev.blockpool.common.StorageException;
import dev.blockpool.host.loops.LoopAttachments;
import dev.blockpool.host.loops.LoopDevice;
import dev.blockpool.host.mounts.MountInfo;
import dev.blockpool.host.mounts.MountOwner;
import dev.blockpool.host.mounts.MountPoints;
import dev.blockpool.host.mounts.MountTable;
import dev.blockpool.host.mounts.Mounter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Mounts a volume's filesystem at a path, idempotently: attaches (or reuses) the image's loop
 * device, formats it only when the probe proved it empty, checks an existing filesystem before
 * a read-write mount and grows it when its device is larger, and mounts it. A path that already holds this volume as asked is success;
 * anything else there is CONFLICT. What it attached for a mount that failed, it detaches.
 */
public final class SafeFormatAndMount {

    private final LoopAttachments loops;
    private final Filesystems filesystems;
    private final Mounter mounter;
    private final MountTable table;

    public SafeFormatAndMount(LoopAttachments loops, Filesystems filesystems, Mounter mounter, MountTable table) {
        this.loops = loops;
        this.filesystems = filesystems;
        this.mounter = mounter;
        this.table = table;
    }

    /**
     * The staged mount of a volume: a read-only mount uses a read-only device, which is never
     * formatted. A volume has one staging path on a node: one staged elsewhere is refused.
     */
    public void mountStaged(Path image, Path staging, FilesystemRequest request) {
        Optional<MountInfo> existing = table.at(staging);
        if (existing.isEmpty()) {
            List<Path> elsewhere = loops.usersOf(image).stream()
                    .filter(m -> !LoopAttachments.isDeviceNodeBind(m))
                    .map(MountInfo::mountPoint)
                    .toList();
            if (!elsewhere.isEmpty()) {
                throw StorageException.precondition(
                        "the volume is already staged on this node (mounted at %s); " + "unstage it there first",
                        elsewhere);
            }
        }
        mount(image, staging, existing, request, request.readOnly());
    }

    /**
     * The mount of an inline volume, new and empty: it is formatted on a read-write device even
     * when the pod is to see it read-only; only the mount is read-only then.
     */
    public void mountInline(Path image, Path target, FilesystemRequest request) {
        mount(image, target, table.at(target), request, false);
    }

    /** {@code existing}: what the table has at {@code mountPoint}, read by the caller for this call. */
    private void mount(
            Path image,
            Path mountPoint,
            Optional<MountInfo> existing,
            FilesystemRequest request,
            boolean readOnlyDevice) {
        if (existing.isPresent()) {
            requireSameMount(existing.get(), image, mountPoint, request);
            return;
        }
        MountPoints.createDirectory(mountPoint);
        LoopAttachments.Acquired acquired = loops.acquire(image, readOnlyDevice);
        LoopDevice loop = acquired.device();
        try {
            FsType type = prepare(image, loop, request, readOnlyDevice);
            MountOptions.requireAllowedFor(request.flags(), type);
            List<String> options = request.readOnly()
                    ? Stream.concat(request.flags().stream(), Stream.of("ro")).toList()
                    : request.flags();
            mounter.mount(loop.device(), mountPoint, type, options);
        } catch (RuntimeException e) {
            if (acquired.attached()) {
                loops.detachAfter(e, loop);
            }
            throw e;
        }
    }

    /** Formats an empty device, checks a formatted one before a read-write mount; returns its type. */
    private FsType prepare(Path image, LoopDevice loop, FilesystemRequest request, boolean readOnlyDevice) {
        Probe probe = filesystems.probe(loop.device());
        if (probe.empty()) {
            if (readOnlyDevice) {
                throw StorageException.precondition(
                        "the volume has no filesystem yet and is to be mounted read-only, so it cannot be formatted");
            }
            FsType type = request.requestedType().orElse(request.defaultType());
            filesystems.format(loop.device(), type);
            return type;
        }
        Optional<FsType> found = probe.partitionTable().isPresent()
                ? Optional.empty()
                : probe.type().flatMap(FsType::find);
        if (found.isEmpty()) {
            throw StorageException.precondition(
                    "the volume holds %s, not an %s filesystem; it is left as it is",
                    probe.describe(), FsType.supported());
        }
        if (request.requestedType().isPresent() && request.requestedType().get() != found.get()) {
            throw StorageException.precondition(
                    "the volume holds an %s filesystem, but %s was requested",
                    found.get(), request.requestedType().get());
        }
        // A growth cut short leaves a filesystem only a repair on a writable device makes whole:
        // mounted read-only as it is, its pod would read what resize2fs left half-moved.
        if (readOnlyDevice && Files.exists(GrowthMarker.beside(image))) {
            throw StorageException.precondition(
                    "the volume's filesystem was being grown when its growth was cut short, and a read-only stage"
                            + " cannot repair it; stage it read-write once (a pod that writes to it), which repairs"
                            + " and finishes the growth");
        }
        // Never fsck a filesystem that is mounted (somewhere else on this node): e2fsck would
        // repair it under the kernel's feet.
        if (!readOnlyDevice && loops.usersOf(loop).isEmpty()) {
            Path growthMarker = GrowthMarker.beside(image);
            filesystems.repairInterruptedGrowth(loop.device(), growthMarker);
            filesystems.check(loop.device(), found.get());
            // A volume expanded while the kernel refused to grow its mounted filesystem; a device
            // bound before the image grew is told its new size first.
            LoopDevice sized = loop.sizeBytes() < imageBytes(image) ? loops.refreshCapacity(loop) : loop;
            filesystems.growUnmounted(sized, found.get(), growthMarker);
        }
        return found.get();
    }

    private static long imageBytes(Path image) {
        try {
            return Files.size(image);
        } catch (IOException e) {
            throw StorageException.io(e, "cannot read the size of the volume's image %s", image);
        }
    }

    private void requireSameMount(MountInfo mount, Path image, Path path, FilesystemRequest request) {
        MountOwner owner = loops.ownerOf(mount, image);
        if (owner != MountOwner.THIS_VOLUME) {
            throw StorageException.conflict(
                    "%s already has %s mounted",
                    path, owner == MountOwner.BROKEN ? "a broken mount" : "another filesystem");
        }
        if (request.requestedType().isPresent()
                && !request.requestedType().get().fsName().equals(mount.fsType())) {
            throw StorageException.conflict(
                    "the volume is mounted at %s as %s, not %s",
                    path, mount.fsType(), request.requestedType().get());
        }
        MountPoints.requireSameReadOnly(mount, request.readOnly(), path);
    }
}
