package dev.blockpool.host.loops;

import dev.blockpool.host.mounts.DeviceNumber;
import dev.blockpool.host.mounts.MountInfoParser;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Who keeps a device busy, for an error message a person can act on: processes with it open,
 * and mount namespaces that still mount it (a namespace created while the volume was mounted —
 * a container build, an unshare — keeps its own copy of the mount after ours is gone).
 */
final class DeviceHolders {

    private static final int MAX_REPORTED = 5;

    private final Path proc;

    DeviceHolders(Path proc) {
        this.proc = proc;
    }

    List<String> of(Path device, DeviceNumber number) {
        List<String> holders = new ArrayList<>();
        Set<String> namespacesSeen = new HashSet<>();
        try (Stream<Path> pids = Files.list(proc)) {
            for (Path pid : pids.filter(p -> p.getFileName().toString().matches("[0-9]+"))
                    .sorted(java.util.Comparator.comparingLong(
                            p -> Long.parseLong(p.getFileName().toString())))
                    .toList()) {
                if (holders.size() >= MAX_REPORTED) {
                    break;
                }
                describe(pid, device, number, namespacesSeen, holders);
            }
        } catch (IOException | RuntimeException e) {
            holders.add("(could not inspect " + proc + ": " + e.getMessage() + ")");
        }
        return holders;
    }

    private static void describe(
            Path pid, Path device, DeviceNumber number, Set<String> namespacesSeen, List<String> holders) {
        String who = "pid " + pid.getFileName() + " (" + read(pid.resolve("comm")) + ")";
        try (Stream<Path> fds = Files.list(pid.resolve("fd"))) {
            if (fds.anyMatch(fd -> device.equals(readLink(fd)))) {
                holders.add(who + " has " + device + " open");
            }
        } catch (IOException | RuntimeException e) {
            // the process exited or is not ours to inspect
        }
        String namespace = String.valueOf(readLink(pid.resolve("ns/mnt")));
        if (namespacesSeen.add(namespace)) {
            try {
                MountInfoParser.parse(Files.readString(pid.resolve("mountinfo"))).stream()
                        .filter(m -> m.device().equals(number))
                        .findFirst()
                        .ifPresent(m -> holders.add(
                                who + " still mounts it at " + m.mountPoint() + " in mount namespace " + namespace));
            } catch (IOException | RuntimeException e) {
                // exited meanwhile
            }
        }
    }

    private static String read(Path file) {
        try {
            return Files.readString(file).strip();
        } catch (IOException e) {
            return "?";
        }
    }

    private static Path readLink(Path link) {
        try {
            return Files.readSymbolicLink(link);
        } catch (IOException | UnsupportedOperationException e) {
            return null;
        }
    }
}
