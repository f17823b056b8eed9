package dev.blockpool.common;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LibcTest {

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

        assertThat(Libc.directoryNames(dir.toString(), ".json")).containsExactlyInAnyOrderElementsOf(wanted);
    }

    @Test
    void aMissingDirectoryIsItsErrno() {
        assertThatThrownBy(() -> Libc.directoryNames(dir.resolve("gone").toString(), ".json"))
                .isInstanceOfSatisfying(Libc.ErrnoException.class, e -> assertThat(e.errno()).isEqualTo(2));
    }
}
