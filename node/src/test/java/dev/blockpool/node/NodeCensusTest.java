package dev.blockpool.node;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.FsType;
import dev.blockpool.common.HealthProblem;
import dev.blockpool.common.HealthProblem.Severity;
import dev.blockpool.host.FakeHost;
import dev.blockpool.host.filesystems.Filesystems.RecordedErrors;
import dev.blockpool.host.loops.LoopDevice;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What a node's census counts: the pool's volumes staged here and their problems, nothing else of the host. */
class NodeCensusTest {

    @TempDir
    Path dir;

    private FakeHost fake;
    private Path pool;
    private FakeVolumeCatalog volumes;
    private NodeCensus census;

    @BeforeEach
    void setUp() throws IOException {
        fake = new FakeHost(dir.resolve("dev"));
        pool = Files.createDirectories(dir.resolve("pool/volumes"));
        volumes = new FakeVolumeCatalog(pool);
        census = new NodeCensus(fake.nodeHost(), volumes);
    }

    private LoopDevice stage(Path image, String at) throws IOException {
        Files.createFile(image);
        LoopDevice device = fake.attach(image, false);
        fake.mount(device.device(), dir.resolve(at), FsType.EXT4, List.of());
        return device;
    }

    @Test
    void theStagedVolumesOfThePoolAreCountedAndNoOtherLoopDevice() throws IOException {
        stage(pool.resolve("vol-1.img"), "staging-1");
        LoopDevice second = stage(pool.resolve("vol-2.img"), "staging-2");
        fake.attach(second.backingFile(), true); // a read-only block publish's own device of the same volume
        fake.attach(Files.createFile(dir.resolve("vol-3.img")), false); // named like ours, but outside the pool
        fake.attach(Files.createFile(dir.resolve("snap.squashfs")), true); // not the driver's at all

        NodeCensus.Figures figures = census.take();

        assertThat(figures.stagedVolumes()).isEqualTo(2);
        assertThat(figures.loopDevices()).isEqualTo(3);
        assertThat(figures.volumeProblems()).isEmpty();
        assertThat(figures.storageProblems()).isEmpty();
    }

    @Test
    void problemsAreCountedByConditionAsTheHealthCallsNameThem() throws IOException {
        LoopDevice one = stage(pool.resolve("vol-1.img"), "staging-1");
        LoopDevice two = stage(pool.resolve("vol-2.img"), "staging-2");
        stage(pool.resolve("vol-3.img"), "staging-3");
        fake.errors.put(one.name(), new RecordedErrors(3, Optional.empty(), "ext4_journal_check_start"));
        fake.errors.put(two.name(), new RecordedErrors(1, Optional.empty(), "ext4_find_entry"));
        volumes.storage.add(HealthProblem.degraded("PoolFull", "the pool's filesystem is full"));

        NodeCensus.Figures figures = census.take();

        assertThat(figures.volumeProblems())
                .isEqualTo(Map.of(new NodeCensus.Condition(Severity.DEGRADED, "FilesystemErrors"), 2));
        assertThat(figures.storageProblems()).containsExactly(new NodeCensus.Condition(Severity.DEGRADED, "PoolFull"));
    }
}
