package dev.blockpool.host;

import dev.blockpool.common.FsType;
import dev.blockpool.common.CommandRunner;
import dev.blockpool.common.StorageException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** {@link Mounter} through mount(8)/umount(8). */
public final class HostMounter implements Mounter {

    private static final Logger log = LoggerFactory.getLogger(HostMounter.class);
    private static final Duration TIMEOUT = Duration.ofMinutes(2);

    private final CommandRunner runner;
    private final MountTable table;

    public HostMounter(CommandRunner runner, MountTable table) {
        this.runner = runner;
        this.table = table;
    }

    @Override
    public void mount(Path device, Path target, FsType type, List<String> options) {
        List<String> command = new ArrayList<>(List.of("mount", "-t", type.fsName()));
        if (!options.isEmpty()) {
            command.addAll(List.of("-o", String.join(",", options)));
        }
        command.addAll(List.of(device.toString(), target.toString()));
        log.info("mounting {} ({}{}) at {}", device, type, options.isEmpty() ? "" : " " + String.join(",", options),
                target);
        runner.runChecked(TIMEOUT, command);
    }

    @Override
    public void bind(Path source, Path target, boolean readOnly, List<String> options) {
        log.info("binding {} at {}{}", source, target, readOnly ? " read-only" : "");
        runner.runChecked(TIMEOUT, List.of("mount", "--bind", source.toString(), target.toString()));
        List<String> flags = new ArrayList<>(options.stream().filter(o -> !o.equals("ro") && !o.equals("rw")).toList());
        if (readOnly) {
            flags.add("ro");
        }
        if (flags.isEmpty()) {
            return;
        }
        // A bind takes the source's flags; read-only and the other per-mount flags need a remount.
        CommandRunner.Result remount = runner.run(TIMEOUT,
                List.of("mount", "-o", "remount,bind," + String.join(",", flags), target.toString()));
        if (!remount.ok()) {
            unmount(target, false);
            throw StorageException.internal("cannot apply %s to the bind mount at %s: %s", flags, target, remount.describe());
        }
    }

    @Override
    public void unmount(Path target, boolean corrupted) {
        Optional<MountInfo> before = table.at(target);
        if (before.isEmpty()) {
            return;
        }
        log.info("unmounting {} ({})", target, before.get().source());
        CommandRunner.Result result = runner.run(TIMEOUT, List.of("umount", target.toString()));
        if (!result.ok() && corrupted && isStill(before.get())) {
            result = runner.run(TIMEOUT, List.of("umount", "--lazy", target.toString()));
        }
        if (isStill(before.get())) {
            throw StorageException.internal("%s is still mounted after umount%s", target,
                    result.ok() ? " (mount " + before.get().mountId() + " of " + before.get().source() + ")"
                            : " (" + result.describe() + ")");
        }
    }

    /** The kernel recycles mount IDs at once, so the ID alone could name somebody else's new mount. */
    private boolean isStill(MountInfo mount) {
        return table.mounts().stream().anyMatch(m -> m.mountId() == mount.mountId()
                && m.mountPoint().equals(mount.mountPoint()) && m.device().equals(mount.device()));
    }
}
