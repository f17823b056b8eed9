package dev.blockpool.pool;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.ProcessCommandRunner;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Pages of volumes and snapshots, read from the pool one page at a time in ID order: each page
 * resumes after the ID the last one ended at, whatever was created or deleted in between.
 */
class PagingTest {

    @TempDir
    Path root;

    private Pool pool;

    @BeforeEach
    void setUp() {
        pool = Pool.open(root, new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO);
    }

    private Volume create(String name) {
        return pool.volumes().create(new VolumeSpec(name, 4096, "ext4", Allocation.SPARSE, Set.of(AccessType.BLOCK),
                Map.of(), Optional.empty()));
    }

    private List<String> createVolumes(int count) {
        return IntStream.range(0, count).mapToObj(i -> create("pvc-" + i).id()).sorted().toList();
    }

    private static List<String> ids(Page<Volume> page) {
        return page.entries().stream().map(Volume::id).toList();
    }

    @Test
    void zeroMaxEntriesIsEverythingOnOnePage() {
        List<String> all = createVolumes(10);
        Page<Volume> page = pool.volumes().page(Optional.empty(), 0);
        assertThat(ids(page)).isEqualTo(all);
        assertThat(page.resumeAfter()).isEmpty();
    }

    @Test
    void pagesWalkEveryVolumeOnceInIdOrderAndAnExactFitEndsWithoutAResumePoint() {
        List<String> all = createVolumes(10);
        Page<Volume> first = pool.volumes().page(Optional.empty(), 5);
        assertThat(ids(first)).isEqualTo(all.subList(0, 5));
        assertThat(first.resumeAfter()).contains(all.get(4));

        Page<Volume> second = pool.volumes().page(first.resumeAfter(), 5);
        assertThat(ids(second)).isEqualTo(all.subList(5, 10));
        assertThat(second.resumeAfter()).isEmpty();
        assertThat(pool.volumes().page(Optional.empty(), 11).resumeAfter()).isEmpty();
    }

    @Test
    void anEmptyPoolHasOneEmptyPage() {
        Page<Volume> page = pool.volumes().page(Optional.empty(), 5);
        assertThat(page.entries()).isEmpty();
        assertThat(page.resumeAfter()).isEmpty();
    }

    @Test
    void everythingDeletedAfterTheFirstPageGivesAnEmptyLastPage() {
        List<String> all = createVolumes(6);
        Page<Volume> first = pool.volumes().page(Optional.empty(), 3);
        all.subList(1, 6).forEach(pool.volumes()::delete);

        Page<Volume> second = pool.volumes().page(first.resumeAfter(), 3);
        assertThat(second.entries()).isEmpty();
        assertThat(second.resumeAfter()).isEmpty();
    }

    /**
     * Hundreds of volumes in small pages while others are created and deleted between pages, as
     * the CSI spec allows: each volume that exists throughout is listed exactly once, one
     * deleted before its page comes never is (even the one a page ended at), and one created
     * between pages is listed once when it sorts after where the listing stands, never otherwise.
     */
    @Test
    void pagingOverManyVolumesListsEachExactlyOnceWhileVolumesComeAndGo() {
        List<String> initial = createVolumes(300);
        List<String> listed = new ArrayList<>();
        List<String> deletedAhead = new ArrayList<>();
        List<String> createdAhead = new ArrayList<>();
        List<String> createdBehind = new ArrayList<>();
        Optional<String> resumeAfter = Optional.empty();
        int pages = 0;
        do {
            Page<Volume> page = pool.volumes().page(resumeAfter, 7);
            assertThat(page.entries()).hasSizeLessThanOrEqualTo(7);
            listed.addAll(ids(page));
            resumeAfter = page.resumeAfter();
            pages++;
            if (resumeAfter.isPresent()) {
                String at = resumeAfter.get();
                // the volume this page ended at goes, and so does the next one not listed yet
                pool.volumes().delete(at);
                initial.stream().filter(id -> id.compareTo(at) > 0).filter(id -> !deletedAhead.contains(id))
                        .findFirst().ifPresent(next -> {
                            pool.volumes().delete(next);
                            deletedAhead.add(next);
                        });
                String created = create("pvc-new-" + pages).id();
                (created.compareTo(at) > 0 ? createdAhead : createdBehind).add(created);
            }
        } while (resumeAfter.isPresent());

        assertThat(listed).doesNotHaveDuplicates().isSorted();
        assertThat(listed).containsAll(initial.stream().filter(id -> !deletedAhead.contains(id)).toList());
        assertThat(listed).doesNotContainAnyElementsOf(deletedAhead);
        assertThat(listed).containsAll(createdAhead).doesNotContainAnyElementsOf(createdBehind);
        assertThat(deletedAhead).isNotEmpty();
        assertThat(createdAhead).isNotEmpty();
        assertThat(createdBehind).isNotEmpty();
    }

    @Test
    void aDamagedRecordIsLeftOutAndThePageStillFills() throws IOException {
        List<String> all = createVolumes(6);
        Files.writeString(root.resolve("volumes").resolve(all.get(1) + ".json"), "{\"id\": ");

        Page<Volume> first = pool.volumes().page(Optional.empty(), 3);
        assertThat(ids(first)).containsExactly(all.get(0), all.get(2), all.get(3));
        assertThat(ids(pool.volumes().page(first.resumeAfter(), 3))).containsExactly(all.get(4), all.get(5));
    }

    @Test
    void snapshotPagesFilterByIdAndSourceVolume() {
        List<String> volumes = createVolumes(2);
        Volume a = pool.volumes().get(volumes.get(0));
        Volume b = pool.volumes().get(volumes.get(1));
        List<String> ofA = IntStream.range(0, 9).mapToObj(i -> snapshot("a-" + i, a)).sorted().toList();
        List<String> ofB = IntStream.range(0, 9).mapToObj(i -> snapshot("b-" + i, b)).sorted().toList();

        List<String> listed = new ArrayList<>();
        Optional<String> resumeAfter = Optional.empty();
        do {
            Page<Snapshot> page = pool.snapshots().page(resumeAfter, 2, Optional.empty(), Optional.of(a.id()));
            assertThat(page.entries()).hasSizeLessThanOrEqualTo(2);
            page.entries().forEach(s -> listed.add(s.id()));
            resumeAfter = page.resumeAfter();
        } while (resumeAfter.isPresent());
        assertThat(listed).isEqualTo(ofA);

        assertThat(pool.snapshots().page(Optional.empty(), 0, Optional.of(ofB.get(3)), Optional.empty()).entries())
                .extracting(Snapshot::id).containsExactly(ofB.get(3));
        assertThat(pool.snapshots().page(Optional.empty(), 0, Optional.of(ofB.get(3)), Optional.of(a.id()))
                .entries()).isEmpty();
        assertThat(pool.snapshots().page(Optional.empty(), 0, Optional.of("snap-nope"), Optional.empty())
                .entries()).isEmpty();
    }

    private String snapshot(String name, Volume source) {
        return pool.snapshots().create(name, source, pool.volumes().imagePath(source.id())).id();
    }
}
