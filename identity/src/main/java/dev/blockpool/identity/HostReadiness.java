package dev.blockpool.identity;

import dev.blockpool.common.FsType;
import dev.blockpool.common.HostTools;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The driver is ready when its pool directory is a writable directory, the host tools every
 * request needs are installed, and at least one filesystem can be served: a node that lacks
 * the tools of one filesystem serves the others (requests for it are refused, naming the
 * missing program and its package), and is not ready only when it can serve none. Checked on
 * each Probe, so a pool that goes away is noticed.
 */
public final class HostReadiness implements Readiness {

    private final Path poolDir;
    private final List<String> required;
    private final Map<FsType, List<String>> perFilesystem;
    private final HostTools tools;

    /**
     * {@code required}: tools without which nothing is served; {@code perFilesystem}: the tools
     * of each filesystem (empty where the services make no filesystem, as a controller's).
     */
    public HostReadiness(
            Path poolDir, List<String> required, Map<FsType, List<String>> perFilesystem, HostTools tools) {
        this.poolDir = poolDir;
        this.required = List.copyOf(required);
        this.perFilesystem = new TreeMap<>(perFilesystem); // in FsType order, for stable messages
        this.tools = tools;
    }

    /** Tools that are all required, and no filesystem of their own. */
    public HostReadiness(Path poolDir, List<String> required, List<Path> searchPath) {
        this(poolDir, required, Map.of(), new HostTools(searchPath));
    }

    @Override
    public List<String> problems() {
        List<String> problems = new ArrayList<>();
        if (!Files.isDirectory(poolDir)) {
            problems.add("pool directory " + poolDir + " does not exist");
        } else if (!Files.isWritable(poolDir)) {
            problems.add("pool directory " + poolDir + " is not writable");
        }
        for (String tool : required) {
            if (!tools.installed(tool)) {
                problems.add("host tool " + HostTools.tool(tool).notInstalled());
            }
        }
        if (!perFilesystem.isEmpty()
                && perFilesystem.keySet().stream().allMatch(fs -> !missing(fs).isEmpty())) {
            List<String> why = new ArrayList<>();
            perFilesystem.keySet().forEach(fs -> why.add(fs + " needs " + String.join(", ", missing(fs))));
            problems.add("no filesystem can be served: " + String.join("; ", why));
        }
        return problems;
    }

    /** The filesystems that cannot be served while others can, and why: for the log, not for Probe. */
    public List<String> limits() {
        if (perFilesystem.keySet().stream().allMatch(fs -> !missing(fs).isEmpty())) {
            return List.of(); // then it is a problem
        }
        List<String> limits = new ArrayList<>();
        for (FsType fs : perFilesystem.keySet()) {
            List<String> missing = missing(fs);
            if (!missing.isEmpty()) {
                limits.add(fs + " volumes cannot be served on this node: " + String.join(", ", missing));
            }
        }
        return limits;
    }

    private List<String> missing(FsType fs) {
        return perFilesystem.get(fs).stream()
                .filter(tool -> !tools.installed(tool))
                .map(tool -> HostTools.tool(tool).notInstalled())
                .toList();
    }
}
