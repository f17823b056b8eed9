package dev.blockpool.systemtest;

import static dev.blockpool.csi.CsiRequests.mount;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import csi.v1.Csi.CapacityRange;
import csi.v1.Csi.ControllerGetCapabilitiesRequest;
import csi.v1.Csi.ControllerModifyVolumeRequest;
import csi.v1.Csi.ControllerServiceCapability;
import csi.v1.Csi.CreateSnapshotRequest;
import csi.v1.Csi.CreateVolumeRequest;
import csi.v1.Csi.Topology;
import csi.v1.Csi.TopologyRequirement;
import csi.v1.Csi.Volume;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import csi.v1.Csi.VolumeContentSource;
import dev.blockpool.common.NeedsRoot;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.io.InputStream;
import java.io.RandomAccessFile;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Two nodes, each with a pool of its own, as the packaged binary serves them (`--pool-scope node`),
 * joined by the peer channel on loopback ports with a CA that `blockpool-csi peer-ca` made: a
 * snapshot or volume of node a restored or cloned on node b arrives byte for byte, and a transfer
 * cut by a killed driver, on either side, finishes once the call is retried. A volume moved from
 * node a to node b by `blockpool-csi move` holds every byte written before its last round, and a
 * move killed in its last steps finishes when run again. A client without the cluster's
 * certificate learns nothing.
 */
@NeedsRoot
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PeerTransferRealHostTest {

    private static final Path REPO = Path.of("..").toAbsolutePath().normalize();
    private static final long MIB = 1 << 20;
    private static final String TOPOLOGY_KEY = "topology.blockpool.csi.dev/node";
    /** How long a restore may take to finish across its retries, on a loaded machine too. */
    private static final Duration RESTORE_LIMIT = Duration.ofMinutes(3);

    private Path dir;
    private Path ca;
    private Node a;
    private Node b;
    private final Random random = new Random(35);

    /** A node: its driver, its pool and the port of its peer channel. */
    private record Node(String id, DriverProcess driver, int peerPort) {}

    @BeforeAll
    void start() throws Exception {
        dir = Files.createTempDirectory("blockpool-peers");
        ca = dir.resolve("peer-ca");
        Process made = new ProcessBuilder(
                        REPO.resolve("bin/blockpool-csi").toString(), "peer-ca", "--out", ca.toString())
                .redirectErrorStream(true)
                .start();
        String output = new String(made.getInputStream().readAllBytes());
        assertThat(made.waitFor()).as(output).isZero();
        int portA = freePort();
        int portB = freePort();
        // node a serves slowly enough that a transfer of a few MiB can be cut in its middle
        a = new Node("node-a", driver("node-a", portA, "node-b", portB, "--peer-bandwidth=4Mi"), portA);
        b = new Node("node-b", driver("node-b", portB, "node-a", portA), portB);
    }

    private DriverProcess driver(String id, int port, String other, int otherPort, String... extra)
            throws IOException, InterruptedException {
        Path home = Files.createDirectories(dir.resolve(id));
        String[] args = Stream.concat(
                        Stream.of(
                                "--peer-listen=127.0.0.1:" + port,
                                "--peer-ca-dir=" + ca,
                                "--peer=" + other + "=127.0.0.1:" + otherPort),
                        Arrays.stream(extra))
                .toArray(String[]::new);
        return new DriverProcess(home, home.resolve("pool"), "all", id, "info", args)
                .nodeLocal()
                .start();
    }

    @AfterAll
    void stop() throws IOException {
        for (Node node : new Node[] {a, b}) {
            if (node != null) {
                node.driver().close();
            }
        }
        if (dir != null) {
            try (Stream<Path> files = Files.walk(dir)) {
                files.sorted((x, y) -> y.compareTo(x))
                        .forEach(path -> path.toFile().delete());
            }
        }
    }

    @Test
    void aSnapshotOfNodeAIsRestoredOnNodeBByteForByte() throws Exception {
        String volume = volumeWithData(a, "pvc-source", 64 * MIB, List.of(0L, 20 * MIB, 64 * MIB - 4096));
        String snapshot = snapshot(a, volume, "snap-source");

        Volume restored = restore(b, "pvc-restored", fromSnapshot(snapshot));

        assertThat(restored.getAccessibleTopologyList()).containsExactly(topology(b.id()));
        assertSameBytes(snapshotImage(a, snapshot), volumeImage(b, restored.getVolumeId()));
        // only what holds data crossed and was written: the restored image is as sparse as its source
        assertThat(allocatedBytes(volumeImage(b, restored.getVolumeId())))
                .isLessThanOrEqualTo(allocatedBytes(snapshotImage(a, snapshot)) + MIB);
    }

    @Test
    void aVolumeOfNodeAIsClonedOnNodeB() throws Exception {
        String volume = volumeWithData(a, "pvc-to-clone", 16 * MIB, List.of(MIB, 9 * MIB));

        Volume cloned = restore(b, "pvc-cloned", fromVolume(volume));

        assertSameBytes(volumeImage(a, volume), volumeImage(b, cloned.getVolumeId()));
    }

    @Test
    void aTransferCutByAKilledSourceFinishesOnceItIsBack() throws Exception {
        restoreCutByKilling(a, "cut-at-source");
    }

    @Test
    void aTransferCutByAKilledDestinationFinishesOnceItIsBack() throws Exception {
        restoreCutByKilling(b, "cut-at-destination");
    }

    /**
     * A restore on node b of a snapshot of node a, whose driver on {@code killed} is killed while
     * the image is on its way and started again: the retried CreateVolume finishes it, byte for byte.
     */
    private void restoreCutByKilling(Node killed, String name) throws Exception {
        String volume = volumeWithData(a, "pvc-" + name, 32 * MIB, dataEvery(MIB, 24));
        String snapshot = snapshot(a, volume, "snap-" + name);

        startRestore(b, "pvc-restored-" + name, fromSnapshot(snapshot));
        awaitIncoming(b);
        killed.driver().kill();
        killed.driver().start();

        Volume restored = restore(b, "pvc-restored-" + name, fromSnapshot(snapshot));
        assertSameBytes(snapshotImage(a, snapshot), volumeImage(b, restored.getVolumeId()));
    }

    /**
     * The cluster's one csi-resizer calls the driver it runs beside: node b's, for a volume of node
     * a's pool, which node a preallocates.
     */
    @Test
    void modifyVolumeOfNodeAsVolumeAskedOfNodeBIsAppliedOnNodeA() throws Exception {
        String volume = volumeWithData(a, "pvc-to-modify", 16 * MIB, List.of(0L));
        assertThat(b.driver()
                        .controller()
                        .controllerGetCapabilities(ControllerGetCapabilitiesRequest.getDefaultInstance())
                        .getCapabilitiesList())
                .extracting(c -> c.getRpc().getType())
                .contains(ControllerServiceCapability.RPC.Type.MODIFY_VOLUME);

        b.driver()
                .controller()
                .controllerModifyVolume(ControllerModifyVolumeRequest.newBuilder()
                        .setVolumeId(volume)
                        .putMutableParams("allocation", "preallocated")
                        .build());

        assertThat(allocatedBytes(volumeImage(a, volume))).isGreaterThanOrEqualTo(16 * MIB);
        assertThat(Files.exists(volumeImage(b, volume))).isFalse();
    }

    @Test
    void aVolumeMovesToNodeBInRoundsWhileWrittenAndAKilledLastStepFinishesWhenRunAgain() throws Exception {
        long size = 32 * MIB;
        String volume = volumeWithData(a, "pvc-moving", size, dataEvery(2 * MIB, 8));

        Move copied = move(volume, null);
        assertThat(copied.exitCode()).as(copied.output()).isZero();
        assertThat(copied.output()).contains("round 1: " + 8 * MIB + " bytes copied (every range that holds data");
        writeRandom(volumeImage(a, volume), size, List.of(MIB, 17 * MIB)); // the workload writes on
        Move again = move(volume, null, "--rounds", "1");
        assertThat(again.exitCode()).as(again.output()).isZero();
        assertThat(again.output()).contains("round 1: " + 2 * MIB + " bytes copied (what changed since");
        writeRandom(volumeImage(a, volume), size, List.of(3 * MIB, 30 * MIB)); // its last writes
        byte[] last = Files.readAllBytes(volumeImage(a, volume));

        // killed with the first chunk of its first round written over the image, the second not yet
        // (a mix of two rounds); then once the volume is committed
        Move cutInARound = move(volume, "pull.chunk-written", "--final");
        assertThat(cutInARound.exitCode()).as(cutInARound.output()).isEqualTo(137);
        assertThat(volumeImage(b, volume)).doesNotExist();
        Move cutAfterCommit = move(volume, "move.committed", "--final");
        assertThat(cutAfterCommit.exitCode()).as(cutAfterCommit.output()).isEqualTo(137);
        assertThat(volumeImage(a, volume)).as("retired only after the commit").exists();
        Move finished = move(volume, null, "--final");

        assertThat(finished.exitCode()).as(finished.output()).isZero();
        assertThat(finished.output()).contains("moved from node node-a to node node-b");
        assertThat(Arrays.mismatch(last, Files.readAllBytes(volumeImage(b, volume))))
                .as("first byte that differs from what node a held")
                .isEqualTo(-1);
        assertThat(volumeImage(a, volume)).doesNotExist();
        assertThat(a.driver().pool().resolve("volumes").resolve(volume + ".json"))
                .doesNotExist();
    }

    @Test
    void aClientWithoutTheClustersCertificateLearnsNothing() throws Exception {
        SSLContext anyServer = SSLContext.getInstance("TLS");
        anyServer.init(null, new TrustManager[] {new TrustingAnyone()}, new SecureRandom());
        try (SSLSocket socket = (SSLSocket) anyServer.getSocketFactory().createSocket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", a.peerPort()), 5_000);
            socket.setSoTimeout(10_000);
            assertThatThrownBy(() -> {
                        socket.startHandshake();
                        // TLS 1.3 asks for the client's certificate after the server's Finished:
                        // the refusal arrives with the first read.
                        socket.getOutputStream().write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes());
                        socket.getOutputStream().flush();
                        InputStream in = socket.getInputStream();
                        if (in.read() < 0) {
                            throw new IOException("closed without an answer");
                        }
                    })
                    .isInstanceOf(IOException.class);
        }
        // plain TCP gets nothing but the end of the connection
        try (Socket plain = new Socket()) {
            plain.connect(new InetSocketAddress("127.0.0.1", a.peerPort()), 5_000);
            plain.setSoTimeout(10_000);
            plain.getOutputStream().write("GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes());
            byte[] answer = plain.getInputStream().readNBytes(4096);
            assertThat(new String(answer)).doesNotContain("snap-").doesNotContain("vol-");
        }
    }

    // ---- the flows' steps ------------------------------------------------------------------------

    /** A volume on {@code node} with 1 MiB of random data written into its image at each offset. */
    private String volumeWithData(Node node, String name, long size, List<Long> offsets) throws IOException {
        String id = node.driver()
                .controller()
                .createVolume(CreateVolumeRequest.newBuilder()
                        .setName(name)
                        .addVolumeCapabilities(mount("ext4", Mode.SINGLE_NODE_WRITER))
                        .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(size))
                        .setAccessibilityRequirements(placedOn(node))
                        .build())
                .getVolume()
                .getVolumeId();
        writeRandom(volumeImage(node, id), size, offsets);
        return id;
    }

    /** 1 MiB of random data at each offset of the image of a volume of {@code size} bytes. */
    private void writeRandom(Path file, long size, List<Long> offsets) throws IOException {
        try (RandomAccessFile image = new RandomAccessFile(file.toFile(), "rw")) {
            for (long offset : offsets) {
                byte[] data = new byte[(int) Math.min(MIB, size - offset)];
                random.nextBytes(data);
                image.seek(offset);
                image.write(data);
            }
            image.getFD().sync();
        }
    }

    /** What `blockpool-csi move` printed and its exit code. */
    private record Move(int exitCode, String output) {}

    /**
     * `blockpool-csi move` of {@code volumeId} from node a, run on node b's pool as its operator
     * would, stopped dead at {@code killPoint} when one is named.
     */
    private Move move(String volumeId, String killPoint, String... extra) throws IOException, InterruptedException {
        List<String> command = Stream.concat(
                        Stream.of(
                                REPO.resolve("bin/blockpool-csi").toString(),
                                "move",
                                "--pool-dir",
                                b.driver().pool().toString(),
                                "--node-id",
                                b.id(),
                                "--peer-ca-dir",
                                ca.toString(),
                                "--from",
                                a.id() + "=127.0.0.1:" + a.peerPort(),
                                "--volume",
                                volumeId),
                        Arrays.stream(extra))
                .toList();
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        if (killPoint != null) {
            builder.environment().put("BLOCKPOOL_TEST_KILL_POINT", killPoint);
        }
        Process process = builder.start();
        String output = new String(process.getInputStream().readAllBytes());
        if (!process.waitFor(RESTORE_LIMIT.toSeconds(), TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("move did not end: " + output);
        }
        return new Move(process.exitValue(), output);
    }

    private static List<Long> dataEvery(long step, int count) {
        return Stream.iterate(0L, offset -> offset + step).limit(count).toList();
    }

    private static String snapshot(Node node, String volumeId, String name) {
        return node.driver()
                .controller()
                .createSnapshot(CreateSnapshotRequest.newBuilder()
                        .setName(name)
                        .setSourceVolumeId(volumeId)
                        .build())
                .getSnapshot()
                .getSnapshotId();
    }

    private static CreateVolumeRequest restoreRequest(Node node, String name, VolumeContentSource source) {
        return CreateVolumeRequest.newBuilder()
                .setName(name)
                .addVolumeCapabilities(mount("ext4", Mode.SINGLE_NODE_WRITER))
                .setVolumeContentSource(source)
                .setAccessibilityRequirements(placedOn(node))
                .build();
    }

    /** One CreateVolume with a short deadline, as a provisioner whose call is cut: the pull goes on. */
    private static void startRestore(Node node, String name, VolumeContentSource source) {
        try {
            node.driver()
                    .controller()
                    .withDeadlineAfter(2, TimeUnit.SECONDS)
                    .createVolume(restoreRequest(node, name, source));
        } catch (StatusRuntimeException e) {
            assertThat(e.getStatus().getCode()).isIn(Status.Code.ABORTED, Status.Code.DEADLINE_EXCEEDED);
        }
    }

    /**
     * CreateVolume on {@code node} until it answers OK, as external-provisioner retries it: ABORTED
     * while the image is on its way, UNAVAILABLE while the other node cannot be reached.
     */
    private static Volume restore(Node node, String name, VolumeContentSource source) throws InterruptedException {
        long deadline = System.nanoTime() + RESTORE_LIMIT.toNanos();
        while (true) {
            try {
                return node.driver()
                        .controller()
                        .withDeadlineAfter(20, TimeUnit.SECONDS)
                        .createVolume(restoreRequest(node, name, source))
                        .getVolume();
            } catch (StatusRuntimeException e) {
                Status.Code code = e.getStatus().getCode();
                boolean retried = code == Status.Code.ABORTED
                        || code == Status.Code.UNAVAILABLE
                        || code == Status.Code.DEADLINE_EXCEEDED;
                if (!retried || System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(500);
            }
        }
    }

    /** Waits until {@code node}'s pool holds part of an image on its way in. */
    private static void awaitIncoming(Node node) throws IOException, InterruptedException {
        Path incoming = node.driver().pool().resolve("incoming");
        long deadline = System.nanoTime() + RESTORE_LIMIT.toNanos();
        while (System.nanoTime() < deadline) {
            if (Files.isDirectory(incoming)) {
                try (Stream<Path> files = Files.list(incoming)) {
                    for (Path file :
                            files.filter(f -> f.toString().endsWith(".img")).toList()) {
                        if (allocatedBytes(file) > 0) {
                            return;
                        }
                    }
                }
            }
            Thread.sleep(50);
        }
        throw new AssertionError("no image arrived in " + incoming);
    }

    // ---- the pools, as files ---------------------------------------------------------------------

    private static Path volumeImage(Node node, String volumeId) {
        return node.driver().pool().resolve("volumes").resolve(volumeId + ".img");
    }

    private static Path snapshotImage(Node node, String snapshotId) {
        return node.driver().pool().resolve("snapshots").resolve(snapshotId + ".img");
    }

    private static void assertSameBytes(Path expected, Path actual) throws IOException {
        assertThat(Files.size(actual)).isEqualTo(Files.size(expected));
        assertThat(Files.mismatch(expected, actual))
                .as("first byte that differs")
                .isEqualTo(-1L);
    }

    /** The bytes the filesystem allocated to the file (st_blocks). */
    private static long allocatedBytes(Path file) throws IOException {
        try {
            Process stat = new ProcessBuilder("stat", "--format=%b %B", file.toString()).start();
            String[] blocks =
                    new String(stat.getInputStream().readAllBytes()).strip().split(" ");
            stat.waitFor();
            return Long.parseLong(blocks[0]) * Long.parseLong(blocks[1]);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
    }

    // ---- CSI values ------------------------------------------------------------------------------

    private static Topology topology(String nodeId) {
        return Topology.newBuilder().putSegments(TOPOLOGY_KEY, nodeId).build();
    }

    private static TopologyRequirement placedOn(Node node) {
        return TopologyRequirement.newBuilder()
                .addRequisite(topology(node.id()))
                .addPreferred(topology(node.id()))
                .build();
    }

    private static VolumeContentSource fromSnapshot(String snapshotId) {
        return VolumeContentSource.newBuilder()
                .setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(snapshotId))
                .build();
    }

    private static VolumeContentSource fromVolume(String volumeId) {
        return VolumeContentSource.newBuilder()
                .setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(volumeId))
                .build();
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    /** A client that takes any server: what is tested is whether the server takes the client. */
    private static final class TrustingAnyone implements X509TrustManager {
        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType) {}

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType) {}

        @Override
        public X509Certificate[] getAcceptedIssuers() {
            return new X509Certificate[0];
        }
    }
}
