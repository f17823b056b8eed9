package dev.blockpool.host.loops;

import dev.blockpool.common.StorageException;
import dev.blockpool.common.TestKillPoint;
import dev.blockpool.host.mounts.DeviceNumber;
import dev.blockpool.host.mounts.MountInfo;
import dev.blockpool.host.mounts.MountOwner;
import dev.blockpool.host.mounts.MountTable;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The loop devices of volume images: attach or reuse one, the read-only device of a read-only
 * block publish, release them once nothing uses them, and tell who uses a device. The kernel's
 * loop sysfs and the mount table are the only records; nothing is remembered.
 */
public final class LoopAttachments {

    /**
     * A bind of a device node /dev/loopN shows in mountinfo with root "/loopN" on the filesystem
     * that holds /dev (devtmpfs): the one rule for recognising a raw block publish.
     */
    private static final Pattern DEVICE_NODE_ROOT = Pattern.compile("/(loop[0-9]+)");

    private final LoopDevices loops;
    private final MountTable table;

    public LoopAttachments(LoopDevices loops, MountTable table) {
        this.loops = loops;
        this.table = table;
    }

    /** The device {@link #acquire} gave, and whether it attached it now (rather than reusing it). */
    public record Acquired(LoopDevice device, boolean attached) {}

    /**
     * The image's device, attached now or reused: one device per image, so that two filesystem
     * instances never write the same image. A read-write use of a read-only device is refused.
     */
    public Acquired acquire(Path image, boolean readOnly) {
        List<LoopDevice> bound = loops.boundTo(image);
        Optional<LoopDevice> existing = LoopDevices.reusableAmong(bound);
        if (existing.isPresent()) {
            if (existing.get().readOnly() && !readOnly) {
                throw StorageException.precondition(
                        "the volume is attached read-only on this node (%s), a read-write use is refused",
                        existing.get().device());
            }
            return new Acquired(existing.get(), false);
        }
        if (!Files.isRegularFile(image)) {
            throw StorageException.notFound("the image of the volume is missing from the pool: %s", image);
        }
        if (!bound.isEmpty()) { // none reusable: each is on its way out
            throw StorageException.precondition(
                    "the image is still bound to %s, which was detached while in use and goes away once released",
                    bound.stream().map(LoopDevice::device).toList());
        }
        Acquired attached = new Acquired(loops.attach(image, readOnly), true);
        TestKillPoint.reached("stage.after-attach");
        return attached;
    }

    /** The device a new user of the image shares, if it has one. */
    public Optional<LoopDevice> reusable(Path image) {
        return loops.reusableFor(image);
    }

    /** A second, read-only device of the image, for a read-only block publish of a writable volume. */
    public LoopDevice attachReadOnlyCopy(Path image) {
        return loops.attach(image, true);
    }

    /**
     * Undoes an attach whose use failed: detaches the device unless something uses it. A failure
     * to detach is added to {@code failure}, which is what the caller reports.
     */
    public void detachAfter(RuntimeException failure, LoopDevice device) {
        try {
            if (usersOf(device).isEmpty()) {
                loops.detach(device);
            }
        } catch (RuntimeException cleanup) {
            failure.addSuppressed(cleanup);
        }
    }

    /**
     * Detaches the image's devices once nothing mounts or binds any of them; FAILED_PRECONDITION,
     * with none detached, otherwise.
     */
    public void releaseAll(Path image) {
        List<LoopDevice> devices = loops.boundTo(image);
        for (LoopDevice loop : devices) {
            List<Path> users = usersOf(loop).stream().map(MountInfo::mountPoint).toList();
            if (!users.isEmpty()) {
                throw StorageException.precondition("%s of this volume is still mounted at %s", loop.device(), users);
            }
        }
        devices.forEach(loops::detach);
    }

    /** Like {@link #releaseAll}, but a device in use leaves them all as they are; says whether it released. */
    public boolean releaseAllIfUnused(Path image) {
        if (loops.boundTo(image).stream().anyMatch(loop -> !usersOf(loop).isEmpty())) {
            return false;
        }
        releaseAll(image);
        return true;
    }

    /**
     * Detaches the device a read-only block publish attached for itself once nothing binds it: a
     * read-only device of an image whose staged device is another, read-write one.
     */
    public void releaseReadOnlyCopy(Path image, LoopDevice device) {
        Optional<LoopDevice> staged = loops.reusableFor(image);
        Optional<LoopDevice> current = loops.byNumber(device.number())
                .filter(l -> l.name().equals(device.name()) && l.backingFileId().equals(device.backingFileId()));
        if (current.isEmpty()
                || !current.get().readOnly()
                || current.get().autoclear()
                || staged.isEmpty()
                || staged.get().readOnly()
                || staged.get().name().equals(device.name())
                || !usersOf(current.get()).isEmpty()) {
            return;
        }
        loops.detach(current.get());
    }

    /**
     * What holds the image on this host: the devices bound to it and every mount of them.
     * {@link #devices} are never empty; {@link #mountPoints} are empty for a raw block volume
     * staged and not published, or a stage that has not mounted yet.
     */
    public record Holders(List<LoopDevice> devices, List<Path> mountPoints) {

        /** In words for a person: "/dev/loop3, mounted at [/staging, /target]". */
        public String describe() {
            String devices = String.join(
                    ", ", this.devices.stream().map(d -> d.device().toString()).toList());
            return mountPoints.isEmpty() ? devices + ", mounted nowhere" : devices + ", mounted at " + mountPoints;
        }
    }

    /**
     * What holds the image while its volume is staged or published here, from loop sysfs and the
     * mount table; empty when nothing does. A device holds it when an unstage would still have
     * something of it to undo: it is not detaching itself, or it is mounted here. Left out are a
     * device detaching itself that only a process or another mount namespace's copy of a mount
     * keeps (an unstage leaves it so too), and one whose backing file was deleted (a former
     * image of the same name, which this image's deletion does not touch). One lookup of the
     * devices by the image's name, not a read of every device.
     */
    public Optional<Holders> holders(Path image) {
        List<LoopDevice> devices = new ArrayList<>();
        List<Path> mountPoints = new ArrayList<>();
        for (LoopDevice device : loops.boundTo(image)) {
            List<MountInfo> users = usersOf(device);
            if (!device.backingFileDeleted() && (!device.autoclear() || !users.isEmpty())) {
                devices.add(device);
                users.forEach(user -> mountPoints.add(user.mountPoint()));
            }
        }
        return devices.isEmpty() ? Optional.empty() : Optional.of(new Holders(devices, mountPoints));
    }

    /** Every bound loop device of this host, the driver's or not. */
    public List<LoopDevice> all() {
        return loops.list();
    }

    /** Every device bound to the image, including ones detaching themselves. */
    public List<LoopDevice> boundTo(Path image) {
        return loops.boundTo(image);
    }

    /** Picks up a grown image: every usable device of it re-reads its size; returns them afresh. */
    public List<LoopDevice> refreshCapacity(Path image) {
        return loops.boundTo(image).stream()
                .filter(l -> !l.autoclear() && !l.backingFileDeleted())
                .map(loops::refreshCapacity)
                .toList();
    }

    /** The device re-reads the size of its grown image; returns it afresh. */
    public LoopDevice refreshCapacity(LoopDevice device) {
        return loops.refreshCapacity(device);
    }

    /** Whose the mount is, from the device behind it. */
    public MountOwner ownerOf(MountInfo mount, Path image) {
        return ownerOf(mount, image, loopOf(mount));
    }

    /**
     * The loop device with this number, when a call before found it bound to the image and it is
     * still bound as it was then: one read of the device, without waiting on anything.
     */
    public Optional<LoopDevice> knownBoundDevice(DeviceNumber number, Path image) {
        return loops.knownBoundDevice(number, image);
    }

    /** Whether the device is bound to the image, whatever mount namespace attached it. */
    public boolean isBoundTo(LoopDevice device, Path image) {
        return loops.isBoundTo(device, image);
    }

    /** Whose the mount is, from {@code loop}, the device behind it as read once ({@link #loopOf}). */
    public MountOwner ownerOf(MountInfo mount, Path image, Optional<LoopDevice> loop) {
        if (loop.isPresent()) {
            return loops.isBoundTo(loop.get(), image) ? MountOwner.THIS_VOLUME : MountOwner.OTHER;
        }
        // A vanished loop device: its filesystem's number, or a device-node bind of it whose
        // node has gone (an ext4 or xfs mount of a directory named loopN is not one).
        boolean deviceNodeBind = boundLoopName(mount).isPresent()
                && !mount.fsType().startsWith("ext")
                && !mount.fsType().equals("xfs");
        return mount.device().major() == LoopSysfs.LOOP_MAJOR || deviceNodeBind ? MountOwner.BROKEN : MountOwner.OTHER;
    }

    /** The loop device behind a mount: a filesystem on it, or its device node bound there. */
    public Optional<LoopDevice> loopOf(MountInfo mount) {
        Optional<LoopDevice> byNumber = loops.byNumber(mount.device());
        if (byNumber.isPresent()) {
            return byNumber;
        }
        return boundLoopName(mount).flatMap(loops::byName).filter(l -> sameDeviceFilesystem(l, mount));
    }

    /** Whether the mount is a bind of a loop device's node (a raw block publish). */
    public static boolean isDeviceNodeBind(MountInfo mount) {
        return boundLoopName(mount).isPresent();
    }

    /** Every mount that uses the device: its filesystem, or binds of its device node. */
    public List<MountInfo> usersOf(LoopDevice loop) {
        return table.mounts().stream()
                .filter(m -> m.device().equals(loop.number())
                        || (boundLoopName(m).equals(Optional.of(loop.name())) && sameDeviceFilesystem(loop, m)))
                .toList();
    }

    /** Every mount of the image through any of its devices. */
    public List<MountInfo> usersOf(Path image) {
        return loops.boundTo(image).stream().flatMap(l -> usersOf(l).stream()).toList();
    }

    private static Optional<String> boundLoopName(MountInfo mount) {
        var matcher = DEVICE_NODE_ROOT.matcher(mount.root());
        return matcher.matches() ? Optional.of(matcher.group(1)) : Optional.empty();
    }

    /** A device-node bind's mount shows the device of the filesystem holding the node (devtmpfs). */
    private static boolean sameDeviceFilesystem(LoopDevice loop, MountInfo mount) {
        try {
            long dev = (Long) Files.getAttribute(loop.device(), "unix:dev");
            return DeviceNumber.fromDevT(dev).equals(mount.device());
        } catch (IOException | UnsupportedOperationException e) {
            return false;
        }
    }
}
