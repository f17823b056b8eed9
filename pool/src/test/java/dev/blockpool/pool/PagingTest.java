package dev.blockpool.pool;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.pool.records.Page;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Pages of volumes and snapshots, read from the pool one page at a time in the order of its
 * directory: each page resumes at the directory position the last one stopped at, whatever
 * was created or deleted in between.
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
        return pool.volumes().create(VolumeSpecs.of(name, 4096, Allocation.SPARSE, AccessType.BLOCK));
    }

    private List<String> createVolumes(int count) {
        return IntStream.range(0, count)
                .mapToObj(i -> create("pvc-" + i).id())
                .sorted()
                .toList();
    }

    private static List<String> ids(Page<Volume> page) {
        return page.entries().stream().map(Volume::id).toList();
    }

    @Test
    void zeroMaxEntriesIsEverythingOnOnePage() {
        List<String> all = createVolumes(10);
        Page<Volume> page = pool.volumes().page(0, 0);
        assertThat(ids(page)).containsExactlyInAnyOrderElementsOf(all);
        assertThat(page.resumeAt()).isEmpty();
    }

    @Test
    void pagesWalkEveryVolumeOnceAndAnExactFitEndsWithoutAResumePoint() {
        List<String> all = createVolumes(10);
        Page<Volume> first = pool.volumes().page(0, 5);
        assertThat(first.entries()).hasSize(5);
        assertThat(first.resumeAt()).isPresent();

        Page<Volume> second = pool.volumes().page(first.resumeAt().getAsLong(), 5);
        assertThat(second.resumeAt()).isEmpty();
        List<String> listed = new ArrayList<>(ids(first));
        listed.addAll(ids(second));
        assertThat(listed).doesNotHaveDuplicates().containsExactlyInAnyOrderElementsOf(all);
        assertThat(pool.volumes().page(0, 11).resumeAt()).isEmpty();
    }

    @Test
    void anEmptyPoolHasOneEmptyPage() {
        Page<Volume> page = pool.volumes().page(0, 5);
        assertThat(page.entries()).isEmpty();
        assertThat(page.resumeAt()).isEmpty();
    }

    @Test
    void everythingDeletedAfterTheFirstPageGivesAnEmptyLastPage() {
        List<String> all = createVolumes(6);
        Page<Volume> first = pool.volumes().page(0, 3);
        all.stream().filter(id -> !ids(first).contains(id)).forEach(pool.volumes()::delete);
        pool.volumes().delete(ids(first).get(2)); // the one the page ended at, too

        Page<Volume> second = pool.volumes().page(first.resumeAt().getAsLong(), 3);
        assertThat(second.entries()).isEmpty();
        assertThat(second.resumeAt()).isEmpty();
    }

    /**
     * Hundreds of volumes in small pages while others are created and deleted between pages, as
     * the CSI spec allows: each volume that exists throughout is listed exactly once, one deleted
     * before its page comes never is (nor does deleting the one a page ended at disturb the next
     * page), and one created between pages is listed at most once.
     */
    @Test
    void pagingOverManyVolumesListsEachExactlyOnceWhileVolumesComeAndGo() {
        List<String> initial = createVolumes(300);
        List<String> listed = new ArrayList<>();
        List<String> deletedAhead = new ArrayList<>();
        List<String> created = new ArrayList<>();
        List<String> deletedListed = new ArrayList<>();
        OptionalLong resumeAt = OptionalLong.empty();
        int pages = 0;
        do {
            Page<Volume> page = pool.volumes().page(resumeAt.orElse(0), 7);
            assertThat(page.entries()).hasSizeLessThanOrEqualTo(7);
            listed.addAll(ids(page));
            resumeAt = page.resumeAt();
            pages++;
            if (resumeAt.isPresent()) {
                // the volume this page ended at goes, and so does one not listed yet
                String last = listed.getLast();
                pool.volumes().delete(last);
                deletedListed.add(last);
                initial.stream()
                        .filter(id -> !listed.contains(id) && !deletedAhead.contains(id))
                        .findFirst()
                        .ifPresent(next -> {
                            pool.volumes().delete(next);
                            deletedAhead.add(next);
                        });
                created.add(create("pvc-new-" + pages).id());
            }
        } while (resumeAt.isPresent());

        assertThat(listed).doesNotHaveDuplicates();
        assertThat(listed)
                .containsAll(initial.stream()
                        .filter(id -> !deletedAhead.contains(id))
                        .toList());
        assertThat(listed).doesNotContainAnyElementsOf(deletedAhead);
        assertThat(listed).containsAll(deletedListed);
        assertThat(listed).hasSizeLessThanOrEqualTo(initial.size() - deletedAhead.size() + created.size());
        assertThat(deletedAhead).isNotEmpty();
        assertThat(pages).isGreaterThan(30);
    }

    @Test
    void aDamagedRecordIsLeftOutAndThePagesStillFill() throws IOException {
        List<String> all = createVolumes(6);
        Files.writeString(root.resolve("volumes").resolve(all.get(1) + ".json"), "{\"id\": ");

        Page<Volume> first = pool.volumes().page(0, 3);
        Page<Volume> second = pool.volumes().page(first.resumeAt().getAsLong(), 3);
        List<String> listed = new ArrayList<>(ids(first));
        listed.addAll(ids(second));
        assertThat(listed)
                .doesNotHaveDuplicates()
                .containsExactlyInAnyOrderElementsOf(
                        all.stream().filter(id -> !id.equals(all.get(1))).toList());
    }

    @Test
    void snapshotPagesFilterByIdAndSourceVolume() {
        List<String> volumes = createVolumes(2);
        Volume a = pool.volumes().get(volumes.get(0));
        Volume b = pool.volumes().get(volumes.get(1));
        List<String> ofA =
                IntStream.range(0, 9).mapToObj(i -> snapshot("a-" + i, a)).toList();
        List<String> ofB =
                IntStream.range(0, 9).mapToObj(i -> snapshot("b-" + i, b)).toList();

        List<String> listed = new ArrayList<>();
        OptionalLong resumeAt = OptionalLong.empty();
        do {
            Page<Snapshot> page = pool.snapshots().page(resumeAt.orElse(0), 2, Optional.empty(), Optional.of(a.id()));
            assertThat(page.entries()).hasSizeLessThanOrEqualTo(2);
            page.entries().forEach(s -> listed.add(s.id()));
            resumeAt = page.resumeAt();
        } while (resumeAt.isPresent());
        assertThat(listed).doesNotHaveDuplicates().containsExactlyInAnyOrderElementsOf(ofA);

        assertThat(pool.snapshots()
                        .page(0, 0, Optional.of(ofB.get(3)), Optional.empty())
                        .entries())
                .extracting(Snapshot::id)
                .containsExactly(ofB.get(3));
        assertThat(pool.snapshots()
                        .page(0, 0, Optional.of(ofB.get(3)), Optional.of(a.id()))
                        .entries())
                .isEmpty();
        assertThat(pool.snapshots()
                        .page(0, 0, Optional.of("snap-nope"), Optional.empty())
                        .entries())
                .isEmpty();
    }

    private String snapshot(String name, Volume source) {
        return pool.snapshots()
                .create(name, source, pool.volumes().imagePath(source.id()))
                .id();
    }
}
