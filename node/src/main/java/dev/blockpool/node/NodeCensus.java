package dev.blockpool.node;

import dev.blockpool.common.HealthProblem;
import dev.blockpool.host.NodeHost;
import dev.blockpool.host.loops.LoopDevice;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What this node holds of the pool, from loop sysfs and the mount table as they are now: the
 * loop devices bound to the pool's volume images, the volumes staged here (a stage binds the
 * image's device, an unstage releases it), and the problems the health calls would report for
 * them and for the pool as this node sees it. It looks at the host's loop devices, not at the
 * pool's records, so its cost follows the volumes on this node, and a volume's health look waits
 * at most the health calls' deadline on a filesystem that does not answer.
 */
public final class NodeCensus {

    /** A kind of problem, as the health calls name it. */
    public record Condition(HealthProblem.Severity severity, String reason) {}

    /**
     * @param loopDevices devices bound to volume images of the pool (a read-only block publish adds one)
     * @param stagedVolumes volumes with a device bound on this node
     * @param volumeProblems how many staged volumes have each problem, as NodeGetVolumeHealth reports them
     * @param storageProblems the pool's problems as NodeGetStorageHealth reports them
     */
    public record Figures(
            int loopDevices,
            int stagedVolumes,
            Map<Condition, Integer> volumeProblems,
            List<Condition> storageProblems,
            Duration took) {}

    private final NodeHost host;
    private final VolumeCatalog volumes;

    public NodeCensus(NodeHost host, VolumeCatalog volumes) {
        this.host = host;
        this.volumes = volumes;
    }

    public Figures take() {
        long started = System.nanoTime();
        Map<Path, Integer> staged = boundImages(host, volumes);
        Map<Condition, Integer> problems = new LinkedHashMap<>();
        for (Path image : staged.keySet()) {
            host.health().problems(image, List.of()).stream()
                    .map(NodeCensus::condition)
                    .distinct()
                    .forEach(condition -> problems.merge(condition, 1, Integer::sum));
        }
        List<Condition> storage = volumes.storageHealth().stream()
                .map(NodeCensus::condition)
                .distinct()
                .toList();
        return new Figures(
                staged.values().stream().mapToInt(Integer::intValue).sum(),
                staged.size(),
                problems,
                storage,
                Duration.ofNanos(System.nanoTime() - started));
    }

    /** The pool's volume images with a loop device bound on this node, each with how many. */
    static Map<Path, Integer> boundImages(NodeHost host, VolumeCatalog volumes) {
        Map<Path, Integer> bound = new LinkedHashMap<>();
        for (LoopDevice device : host.loops().all()) {
            volumeOf(host, volumes, device).ifPresent(volume -> bound.merge(volume.image(), 1, Integer::sum));
        }
        return bound;
    }

    /** A volume of the pool with a loop device bound on this node: its ID and its image. */
    record BoundVolume(String id, Path image) {}

    /** The pool's volumes with a loop device bound on this node, each once. */
    static List<BoundVolume> boundVolumes(NodeHost host, VolumeCatalog volumes) {
        return host.loops().all().stream()
                .map(device -> volumeOf(host, volumes, device))
                .flatMap(Optional::stream)
                .distinct()
                .toList();
    }

    /**
     * The pool volume the device is bound to, if it is one: the volume its backing file is named
     * for, bound by device and inode (the path the kernel prints is only a hint).
     */
    private static Optional<BoundVolume> volumeOf(NodeHost host, VolumeCatalog volumes, LoopDevice device) {
        Path name = device.backingFile().getFileName();
        if (name == null) {
            return Optional.empty();
        }
        String file = name.toString();
        int dot = file.lastIndexOf('.');
        if (dot <= 0) {
            return Optional.empty();
        }
        String id = file.substring(0, dot);
        return volumes.imageOf(id)
                .filter(image -> image.getFileName().toString().equals(file))
                .filter(image -> host.loops().isBoundTo(device, image))
                .map(image -> new BoundVolume(id, image));
    }

    private static Condition condition(HealthProblem problem) {
        return new Condition(problem.severity(), problem.reason());
    }
}
