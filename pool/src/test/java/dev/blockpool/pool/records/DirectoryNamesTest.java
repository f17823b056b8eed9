package dev.blockpool.pool.records;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.Libc;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DirectoryNamesTest {

    @TempDir
    Path dir;

    @Test
    void directoryNamesAreEveryNameWithTheSuffixAndNoOther() throws IOException {
        List<String> wanted = new ArrayList<>();
        // long names, so that the directory takes several getdents64 calls to read
        String padding = "x".repeat(200);
        for (int i = 0; i < 6000; i++) {
            String name = i + padding + ".json";
            Files.createFile(dir.resolve(name));
            Files.createFile(dir.resolve(i + padding + ".img"));
            wanted.add(name);
        }
        for (String name : List.of("é-ü.json", ".json", "a.json.tmp", "json")) {
            Files.createFile(dir.resolve(name));
        }
        wanted.addAll(List.of("é-ü.json", ".json"));

        assertThat(names(DirectoryNames.read(dir.toString(), ".json", 0, Integer.MAX_VALUE)))
                .containsExactlyInAnyOrderElementsOf(wanted);
    }

    @Test
    void aReadResumesAtThePositionOfTheLastNameItGave() throws IOException {
        List<String> all = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            all.add(i + ".json");
            Files.createFile(dir.resolve(i + ".json"));
        }
        DirectoryNames.Read first = DirectoryNames.read(dir.toString(), ".json", 0, 20);
        assertThat(first.entries()).hasSize(20);
        assertThat(first.end()).isFalse();
        Files.delete(dir.resolve(first.entries().getLast().name())); // the name the read stopped at goes

        DirectoryNames.Read rest = DirectoryNames.read(
                dir.toString(), ".json", first.entries().getLast().resumeAt(), Integer.MAX_VALUE);
        assertThat(rest.end()).isTrue();
        List<String> listed = new ArrayList<>(names(first));
        listed.addAll(names(rest));
        assertThat(listed).doesNotHaveDuplicates().containsExactlyInAnyOrderElementsOf(all);
    }

    private static List<String> names(DirectoryNames.Read read) {
        return read.entries().stream().map(DirectoryNames.Entry::name).toList();
    }

    @Test
    void aMissingDirectoryIsItsErrno() {
        assertThatThrownBy(() -> DirectoryNames.read(dir.resolve("gone").toString(), ".json", 0, 1))
                .isInstanceOfSatisfying(
                        Libc.ErrnoException.class, e -> assertThat(e.errno()).isEqualTo(2));
    }
}
