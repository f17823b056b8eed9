package dev.blockpool.node;

import dev.blockpool.common.HealthProblem;
import dev.blockpool.csi.CsiException;
import dev.blockpool.pool.AccessType;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The node's view of a pool, in memory, over image files in one directory: the volumes a test
 * puts in {@link #volumes}, by ID ({@code vol-...}) or, for an inline volume, by kubelet's handle
 * (whose pool ID is {@code vol-eph-<handle>}); the pool's storage health, {@link #storage}.
 */
final class FakeVolumeCatalog implements VolumeCatalog {

    /** By volume ID, or by kubelet's handle for an inline volume. */
    final Map<String, NodeVolume> volumes = new ConcurrentHashMap<>();
    /** What the pool's storage health says. */
    final List<HealthProblem> storage = new ArrayList<>();

    private final Path images;

    /** {@code images}: where the volumes' image files are, named {@code <ID>.img}. */
    FakeVolumeCatalog(Path images) {
        this.images = images;
    }

    @Override
    public Optional<NodeVolume> find(String volumeId) {
        return Optional.ofNullable(volumes.get(volumeId));
    }

    @Override
    public Optional<Path> imageOf(String volumeId) {
        return volumeId.startsWith("vol-") ? Optional.of(images.resolve(volumeId + ".img")) : Optional.empty();
    }

    @Override
    public String lockKey(String volumeId) {
        return volumeId.startsWith("vol-") ? volumeId : "vol-eph-" + volumeId;
    }

    @Override
    public Path imageFor(String volumeId) {
        return find(volumeId).map(NodeVolume::image).orElse(images.resolve(volumeId + ".img"));
    }

    @Override
    public List<HealthProblem> health(String volumeId) {
        if (find(volumeId).isEmpty()) {
            throw CsiException.notFound("volume %s does not exist", volumeId);
        }
        return List.of();
    }

    @Override
    public List<HealthProblem> storageHealth() {
        return storage;
    }

    @Override
    public NodeVolume createEphemeral(String handle, long capacityBytes, String fsType) {
        return volumes.computeIfAbsent(handle, h -> {
            try {
                return new NodeVolume(
                        "vol-eph-" + h,
                        Files.createFile(images.resolve("vol-eph-" + h + ".img")),
                        Optional.of(fsType),
                        Set.of(AccessType.MOUNT),
                        NodeVolume.Lifetime.EPHEMERAL);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
    }

    @Override
    public void growImage(NodeVolume volume, long bytes) {}

    @Override
    public void delete(NodeVolume volume) {
        volumes.values().remove(volume);
    }
}
