package dev.blockpool.node;

import dev.blockpool.common.BlockingCalls;
import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.ProcessCommandRunner;
import dev.blockpool.host.loops.LoopDevice;
import dev.blockpool.host.loops.LoopSysfs;
import dev.blockpool.host.mounts.MountInfo;
import dev.blockpool.host.mounts.ProcMountTable;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * What the real-host tests inspect and clean up: mounts below a test's directory and loop
 * devices bound to images below it. Only ever touches what lives under that directory, so
 * tests never disturb anything else on the machine.
 */
final class RealHost {

    static final CommandRunner RUNNER = new ProcessCommandRunner();
    private static final LoopSysfs LOOPS = LoopSysfs.onThisHost(new BlockingCalls("inspector", 2));

    private RealHost() {}

    static List<MountInfo> mountsUnder(Path dir) {
        Path root = canonical(dir);
        return new ProcMountTable()
                .mounts().stream().filter(m -> m.mountPoint().startsWith(root)).toList();
    }

    static List<MountInfo> mountsAt(Path path) {
        Path wanted = canonical(path);
        return new ProcMountTable()
                .mounts().stream().filter(m -> m.mountPoint().equals(wanted)).toList();
    }

    static List<LoopDevice> loopsUnder(Path dir) {
        Path root = canonical(dir);
        return LOOPS.list().stream()
                .filter(l -> l.backingFile().startsWith(root))
                .toList();
    }

    static List<LoopDevice> loopsOf(Path image) {
        Path wanted = canonical(image);
        return LOOPS.list().stream().filter(l -> l.backingFile().equals(wanted)).toList();
    }

    static String run(String... command) {
        return RUNNER.runChecked(command).stdout();
    }

    /** Unmounts everything below {@code dir} (deepest first), detaches its loop devices, deletes it. */
    static void cleanUp(Path dir) throws IOException {
        for (int attempt = 0; attempt < 5; attempt++) {
            List<MountInfo> mounts = mountsUnder(dir).stream()
                    .sorted(Comparator.comparingInt(
                                    (MountInfo m) -> m.mountPoint().getNameCount())
                            .reversed()
                            .thenComparing(
                                    Comparator.comparingInt(MountInfo::mountId).reversed()))
                    .toList();
            if (mounts.isEmpty()) {
                break;
            }
            for (MountInfo m : mounts) {
                if (!RUNNER.run("umount", m.mountPoint().toString()).ok()) {
                    RUNNER.run("umount", "--lazy", m.mountPoint().toString());
                }
            }
        }
        for (LoopDevice loop : loopsUnder(dir)) {
            RUNNER.run("losetup", "--detach", loop.device().toString());
        }
        if (!mountsUnder(dir).isEmpty()) {
            throw new IllegalStateException("could not unmount everything below " + dir + ": " + mountsUnder(dir));
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    /** The path as the kernel prints it in this mount namespace: absolute, symlinks resolved where it exists. */
    static Path canonical(Path path) {
        try {
            return path.toRealPath();
        } catch (IOException e) {
            return path.toAbsolutePath().normalize();
        }
    }
}
