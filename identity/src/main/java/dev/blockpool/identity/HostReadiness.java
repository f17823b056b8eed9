package dev.blockpool.identity;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The driver is ready when its pool directory is a writable directory and every host tool its
 * services call is installed. Checked on each Probe, so a pool that goes away is noticed.
 */
public final class HostReadiness implements Readiness {

    private final Path poolDir;
    private final List<String> tools;
    private final List<Path> searchPath;

    public HostReadiness(Path poolDir, List<String> tools, List<Path> searchPath) {
        this.poolDir = poolDir;
        this.tools = List.copyOf(tools);
        this.searchPath = List.copyOf(searchPath);
    }

    /** Searches the directories of {@code $PATH} plus the sbin directories root tools live in. */
    public static HostReadiness onThisHost(Path poolDir, List<String> tools) {
        List<Path> dirs = new ArrayList<>();
        String path = System.getenv().getOrDefault("PATH", "");
        for (String dir : path.split(":")) {
            if (!dir.isEmpty()) {
                dirs.add(Path.of(dir));
            }
        }
        for (String dir : List.of("/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin", "/bin")) {
            dirs.add(Path.of(dir));
        }
        return new HostReadiness(poolDir, tools, dirs);
    }

    @Override
    public List<String> problems() {
        List<String> problems = new ArrayList<>();
        if (!Files.isDirectory(poolDir)) {
            problems.add("pool directory " + poolDir + " does not exist");
        } else if (!Files.isWritable(poolDir)) {
            problems.add("pool directory " + poolDir + " is not writable");
        }
        for (String tool : tools) {
            if (searchPath.stream().noneMatch(dir -> Files.isExecutable(dir.resolve(tool)))) {
                problems.add("host tool `" + tool + "` is not installed");
            }
        }
        return problems;
    }
}
