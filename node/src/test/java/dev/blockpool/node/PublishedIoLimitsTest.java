package dev.blockpool.node;

import static org.assertj.core.api.Assertions.assertThat;

import csi.v1.Csi;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import csi.v1.NodeGrpc;
import dev.blockpool.common.IoLimits;
import dev.blockpool.common.OperationLocks;
import dev.blockpool.csi.CsiRequests;
import dev.blockpool.csi.InProcessCsi;
import dev.blockpool.host.FakeHost;
import dev.blockpool.host.KubeletPaths;
import dev.blockpool.pool.AccessType;
import dev.blockpool.pool.Allocation;
import dev.blockpool.pool.Volume;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A volume's I/O limits in the cgroups of the pods it is published to, on the fake host: set by
 * NodePublishVolume for its pod, and by the node's look for every pod from the volume's record as
 * it is now.
 */
class PublishedIoLimitsTest {

    private static final String POD_A = "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0";
    private static final String POD_B = "11111111-2222-3333-4444-555555555555";
    private static final IoLimits LIMITS = new IoLimits(200, 100, 20L << 20, 10L << 20);
    private static final Csi.VolumeCapability WRITER = CsiRequests.mount(Mode.SINGLE_NODE_MULTI_WRITER);

    @TempDir
    Path dir;

    private final OperationLocks locks = new OperationLocks();
    private FakeHost fake;
    private FakeVolumeCatalog catalog;
    private InProcessCsi served;
    private NodeGrpc.NodeBlockingStub node;
    private Path image;

    @BeforeEach
    void setUp() throws IOException {
        fake = new FakeHost(dir.resolve("dev"));
        catalog = new FakeVolumeCatalog(dir);
        image = Files.createFile(dir.resolve("vol-1.img"));
        limitTo(LIMITS);
        served = InProcessCsi.serve(new NodeService(
                NodeIdentity.of("node-a", 16),
                catalog,
                fake.nodeHost(),
                new KubeletPaths(dir.resolve("pool"), dir.resolve("csi.sock")),
                locks,
                Runnable::run,
                volumeId -> Optional.empty()));
        node = NodeGrpc.newBlockingStub(served.channel());
    }

    @AfterEach
    void tearDown() {
        served.close();
    }

    /** The volume's record says {@code limits} from now on. */
    private void limitTo(IoLimits limits) {
        catalog.volumes.put(
                "vol-1",
                new NodeVolume(
                        "vol-1",
                        image,
                        Optional.of("ext4"),
                        Set.of(AccessType.MOUNT),
                        NodeVolume.Lifetime.PERSISTENT,
                        limits));
    }

    /** Where kubelet publishes a file system volume to the pod. */
    private Path target(String podUid) {
        return dir.resolve("kubelet/pods/" + podUid + "/volumes/kubernetes.io~csi/pvc-1/mount");
    }

    private void stage() {
        node.nodeStageVolume(Csi.NodeStageVolumeRequest.newBuilder()
                .setVolumeId("vol-1")
                .setStagingTargetPath(dir.resolve("staging").toString())
                .setVolumeCapability(WRITER)
                .build());
    }

    private void publish(String podUid) {
        node.nodePublishVolume(Csi.NodePublishVolumeRequest.newBuilder()
                .setVolumeId("vol-1")
                .setStagingTargetPath(dir.resolve("staging").toString())
                .setTargetPath(target(podUid).toString())
                .setVolumeCapability(WRITER)
                .build());
    }

    private PublishedIoLimits limits() {
        return new PublishedIoLimits(fake.nodeHost(), catalog, locks);
    }

    @Test
    void publishLimitsItsPodOnTheVolumesLoopDevice() {
        stage();
        publish(POD_A);

        assertThat(fake.podLimits).isEqualTo(Map.of(POD_A + " 7:0", LIMITS));
    }

    @Test
    void aPodWithoutACgroupYetIsPublishedAndLeftToTheLook() {
        fake.podsWithoutCgroup.add(POD_A);
        stage();
        publish(POD_A);
        assertThat(fake.podLimits).isEmpty();

        fake.podsWithoutCgroup.clear();
        limits().look();
        assertThat(fake.podLimits).isEqualTo(Map.of(POD_A + " 7:0", LIMITS));
    }

    @Test
    void aVolumeWithoutLimitsSetsNothingAtPublish() {
        limitTo(IoLimits.NONE);
        stage();
        publish(POD_A);

        assertThat(fake.podLimits).isEmpty();
    }

    @Test
    void theLookSetsEveryPodFromTheRecordAsItIsNow() {
        stage();
        publish(POD_A);
        publish(POD_B);
        IoLimits changed = new IoLimits(0, 0, 50L << 20, 0);
        limitTo(changed); // as a controller on another node changes the record

        limits().look();

        assertThat(fake.podLimits).isEqualTo(Map.of(POD_A + " 7:0", changed, POD_B + " 7:0", changed));
        limitTo(IoLimits.NONE);
        limits().look();
        assertThat(fake.podLimits).as("lifted").containsOnlyKeys(POD_A + " 7:0", POD_B + " 7:0");
        assertThat(fake.podLimits.values()).containsOnly(IoLimits.NONE);
    }

    @Test
    void aVolumeStagedButPublishedToNoPodIsNotLookedAt() {
        stage();
        catalog.volumes.clear(); // its record would not even be found

        limits().look();

        assertThat(fake.podLimits).isEmpty();
    }

    @Test
    void aVolumeACallHoldsIsLeftToTheNextLook() {
        stage();
        publish(POD_A);
        limitTo(IoLimits.NONE);

        locks.withLock(() -> limits().look(), "vol-1");
        assertThat(fake.podLimits).isEqualTo(Map.of(POD_A + " 7:0", LIMITS));

        limits().look();
        assertThat(fake.podLimits).isEqualTo(Map.of(POD_A + " 7:0", IoLimits.NONE));
    }

    @Test
    void aChangeFromTheControllerBesideReachesEveryPodAtOnce() {
        stage();
        publish(POD_A);
        limitTo(IoLimits.NONE);

        limits().apply(new Volume(
                        "vol-1",
                        "pvc-1",
                        1 << 20,
                        "ext4",
                        Allocation.SPARSE,
                        Set.of(AccessType.MOUNT),
                        Map.of(),
                        Optional.empty(),
                        Instant.EPOCH,
                        List.of())
                .withIoLimits(new IoLimits(0, 10, 0, 0)));

        assertThat(fake.podLimits).isEqualTo(Map.of(POD_A + " 7:0", new IoLimits(0, 10, 0, 0)));
    }
}
