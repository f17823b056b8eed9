package dev.blockpool.common;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LibcTest {

    @TempDir
    Path dir;

    @Test
    void aPathIsLookedAtItself() throws IOException {
        Path real = Files.createDirectories(dir.resolve("real/dir"));
        Path link = Files.createSymbolicLink(dir.resolve("link"), real);
        assertThat(Libc.lstat(link.toString()).mode() & Libc.S_IFMT).isEqualTo(Libc.S_IFLNK);
        assertThat(Libc.lstat(real.toString()).isDirectory()).isTrue();
        assertThatThrownBy(() -> Libc.lstat(dir.resolve("gone").toString()))
                .isInstanceOfSatisfying(
                        Libc.ErrnoException.class, e -> assertThat(e.errno()).isEqualTo(Libc.ENOENT));
    }

    @Test
    void aFailureNamesItsCallAndKeepsItsErrno() {
        assertThatThrownBy(() -> Libc.lstat(dir.resolve("gone").toString()))
                .isInstanceOfSatisfying(
                        Libc.ErrnoException.class, e -> assertThat(e.errno()).isEqualTo(Libc.ENOENT))
                .hasMessage("statx: No such file or directory");
        assertThatThrownBy(() -> Libc.open(dir.resolve("gone").toString(), Libc.O_RDONLY, 0))
                .hasMessage("openat: No such file or directory");
        int fd = Libc.open(dir.toString(), Libc.O_RDONLY | Libc.O_DIRECTORY, 0);
        try {
            assertThatThrownBy(() -> Libc.ioctl(fd, new Libc.Ioctl("LOOP_CLR_FD", 0x4C01), 0L))
                    .isInstanceOfSatisfying(
                            Libc.ErrnoException.class,
                            e -> assertThat(e.errno()).isEqualTo(Libc.ENOTTY))
                    .hasMessageStartingWith("LOOP_CLR_FD: ");
        } finally {
            Libc.close(fd);
        }
    }

    @Test
    void statxAndStatfsReadWhatTheJdkReads() throws IOException {
        Path file = Files.write(dir.resolve("file"), new byte[12345]);
        int fd = Libc.openPathNoSymlinks(file.toString(), false);
        try {
            Libc.Stat stat = Libc.stat(fd);
            assertThat(stat.isRegularFile()).isTrue();
            assertThat(stat.size()).isEqualTo(12345);
            long dev = (long) Files.getAttribute(file, "unix:dev");
            assertThat(stat.devMajor()).isEqualTo((int) (((dev >>> 32) & 0xfffff000L) | ((dev >>> 8) & 0xfff)));
            assertThat(stat.devMinor()).isEqualTo((int) (((dev >>> 12) & 0xffffff00L) | (dev & 0xff)));

            Libc.StatFs statfs = Libc.fstatfs(fd);
            FileStore store = Files.getFileStore(file);
            assertThat(statfs.fragmentSize()).isPositive();
            assertThat(statfs.blocks() * statfs.fragmentSize()).isEqualTo(store.getTotalSpace());
            assertThat(statfs.readOnly()).isFalse();
        } finally {
            Libc.close(fd);
        }
        Libc.Stat nullDevice = Libc.lstat("/dev/null");
        assertThat(nullDevice.mode() & Libc.S_IFMT).isEqualTo(Libc.S_IFCHR);
        assertThat(List.of(nullDevice.rdevMajor(), nullDevice.rdevMinor())).containsExactly(1, 3);
    }

    @Test
    void aPathIsOpenedFromTheCachesOrSaysWhyNot() throws IOException {
        Path real = Files.createDirectories(dir.resolve("real/dir"));
        java.util.OptionalInt opened = Libc.openPathCached(real.toString());
        assertThat(opened).isPresent(); // just made: in the caches
        try {
            Libc.Stat stat = Libc.statCached(opened.getAsInt());
            assertThat(stat.isDirectory()).isTrue();
            assertThat(stat.mountRoot()).contains(false);
        } finally {
            Libc.close(opened.getAsInt());
        }
        Path missing = real.resolve("missing");
        assertThat(Files.exists(missing)).isFalse(); // looked up once: the caches know it is not there
        assertThatThrownBy(() -> Libc.openPathCached(missing.toString()))
                .isInstanceOfSatisfying(
                        Libc.ErrnoException.class, e -> assertThat(e.errno()).isEqualTo(Libc.ENOENT));
        Path link = Files.createSymbolicLink(dir.resolve("link"), real);
        assertThatThrownBy(() -> Libc.openPathCached(link.resolve("x").toString()))
                .isInstanceOfSatisfying(
                        Libc.ErrnoException.class, e -> assertThat(e.errno()).isEqualTo(Libc.ELOOP));
        java.util.OptionalInt root = Libc.openPathCached("/");
        assertThat(root).isPresent();
        try {
            assertThat(Libc.statCached(root.getAsInt()).mountRoot()).contains(true);
        } finally {
            Libc.close(root.getAsInt());
        }
    }
}
