package dev.blockpool.systemtest;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The fuzz test's directory, and which of its paths the driver may use:
 * <pre>
 *   sentinel/               files of every kind that no request may change (compared after every request)
 *   cwd/a/b/c/d/e/          the driver's working directory, where a relative path taken for real would land
 *   kubelet/                a kubelet-like scratch tree: the staging and target paths the test legitimately
 *                           uses, beside hostile objects (kubelet's vol_data.json, symlinks into the sentinel)
 *   driver/n1/n2/n3/n4/n5/  the driver's pool, socket and log: deep enough that no '..' in a value climbs out
 *   keep/                   a hard link to the driver's socket, to put it back should a request remove it
 * </pre>
 * Every object here is made from a recipe, so that after a violation the tree can be put back
 * as it was and the run goes on finding the next one.
 */
final class FuzzTree implements AutoCloseable {

    /** The paths a fixture volume is legitimately staged and published at. */
    record FixturePaths(String name, boolean block, Path staging, List<Path> targets) {}

    private sealed interface Recipe {
        Path path();
    }

    private record Dir(Path path) implements Recipe {}

    private record DataFile(Path path, String content) implements Recipe {}

    private record Link(Path path, Path target) implements Recipe {}

    private record Fifo(Path path) implements Recipe {}

    private record CharDevice(Path path, long rdev) implements Recipe {}

    private record Socket(Path path) implements Recipe {}

    static final int PODS = 3;
    static final int INLINE_TARGETS = 2;

    private final Path root;
    private final Path sentinel;
    private final Path cwd;
    private final Path kubelet;
    private final Path driverDir;
    private final Path keptSocket;
    private final List<Recipe> recipes = new ArrayList<>();
    private final List<FixturePaths> fixtures = new ArrayList<>();
    private final List<Path> inlineTargets = new ArrayList<>();
    private final List<HostileValues.Value> hostile = new ArrayList<>();
    private final List<HostileValues.Value> legit = new ArrayList<>();
    private ServerSocketChannel liveSocket;

    FuzzTree(Path root, List<String> mountFixtures, List<String> blockFixtures) {
        this.root = root;
        this.sentinel = root.resolve("sentinel");
        this.cwd = root.resolve("cwd/a/b/c/d/e");
        this.kubelet = root.resolve("kubelet");
        this.driverDir = root.resolve("driver/n1/n2/n3/n4/n5");
        this.keptSocket = root.resolve("keep/csi.sock");
        sentinelRecipes();
        Path csi = kubelet.resolve("plugins/kubernetes.io/csi");
        for (String name : mountFixtures) {
            Path staging = csi.resolve("blockpool.csi.dev/" + name + "/globalmount");
            recipes.add(new Dir(staging));
            recipes.add(
                    new DataFile(staging.resolveSibling("vol_data.json"), "{\"driverName\":\"blockpool.csi.dev\"}\n"));
            List<Path> targets = new ArrayList<>();
            for (int pod = 0; pod < PODS; pod++) {
                Path parent = kubelet.resolve("pods/pod-" + pod + "/volumes/kubernetes.io~csi/" + name);
                recipes.add(new Dir(parent));
                recipes.add(new DataFile(parent.resolve("vol_data.json"), "{\"volumeHandle\":\"" + name + "\"}\n"));
                targets.add(parent.resolve("mount"));
            }
            fixtures.add(new FixturePaths(name, false, staging, targets));
        }
        for (String name : blockFixtures) {
            Path staging = csi.resolve("volumeDevices/staging/" + name);
            recipes.add(new Dir(staging));
            recipes.add(new Dir(csi.resolve("volumeDevices/publish/" + name)));
            List<Path> targets = new ArrayList<>();
            for (int pod = 0; pod < PODS; pod++) {
                targets.add(csi.resolve("volumeDevices/publish/" + name + "/pod-" + pod));
            }
            fixtures.add(new FixturePaths(name, true, staging, targets));
        }
        for (int i = 0; i < INLINE_TARGETS; i++) {
            Path parent = kubelet.resolve("pods/pod-inline-" + i + "/volumes/kubernetes.io~csi/inline");
            recipes.add(new Dir(parent));
            inlineTargets.add(parent.resolve("mount"));
        }
        // An attacker's symlinks where kubelet's staging and target paths would be.
        Path evilTarget = kubelet.resolve("pods/pod-evil/volumes/kubernetes.io~csi/link/mount");
        Path evilBlock = csi.resolve("volumeDevices/publish/evil/pod-evil");
        Path evilStaging = csi.resolve("blockpool.csi.dev/evil/globalmount");
        recipes.add(new Link(evilTarget, sentinel.resolve("empty")));
        recipes.add(new Link(evilBlock, sentinel.resolve("data.txt")));
        recipes.add(new Link(evilStaging, sentinel.resolve("full")));
        hostileValues(evilTarget, evilBlock, evilStaging);
        for (FixturePaths f : fixtures) {
            legit.add(new HostileValues.Value(f.staging().toString(), "staging path of " + f.name()));
            f.targets().forEach(t -> legit.add(new HostileValues.Value(t.toString(), "a target path of " + f.name())));
        }
        inlineTargets.forEach(t -> legit.add(new HostileValues.Value(t.toString(), "an inline target path")));
    }

    private void sentinelRecipes() {
        recipes.add(new Dir(sentinel));
        recipes.add(new DataFile(sentinel.resolve("data.txt"), "sentinel data: no request may change this file\n"));
        recipes.add(new Dir(sentinel.resolve("empty")));
        recipes.add(new Dir(sentinel.resolve("full")));
        recipes.add(new DataFile(sentinel.resolve("full/inner.txt"), "inner\n"));
        recipes.add(new Dir(sentinel.resolve("full/sub")));
        recipes.add(new DataFile(sentinel.resolve("full/sub/deep.txt"), "deep\n"));
        recipes.add(new Link(sentinel.resolve("link-to-data"), sentinel.resolve("data.txt")));
        recipes.add(new Link(sentinel.resolve("link-to-empty"), sentinel.resolve("empty")));
        recipes.add(new Link(sentinel.resolve("link-to-full"), sentinel.resolve("full")));
        recipes.add(new Link(sentinel.resolve("dangling"), sentinel.resolve("missing")));
        recipes.add(new Fifo(sentinel.resolve("fifo")));
        recipes.add(new CharDevice(sentinel.resolve("null"), devNullNumber()));
        recipes.add(new DataFile(sentinel.resolve("csi.sock"), "a regular file where a socket might be\n"));
        recipes.add(new Socket(sentinel.resolve("live.sock")));
        recipes.add(new Dir(cwd));
    }

    /** The paths a request may name only to be refused; none of them could be kubelet's. */
    private void hostileValues(Path evilTarget, Path evilBlock, Path evilStaging) {
        hostile("data.txt", "a sentinel file");
        hostile("full", "a non-empty sentinel dir");
        hostile("full/inner.txt", "a file in a sentinel dir");
        hostile("full/sub", "a sentinel subdir");
        hostile("fifo", "the test's fifo");
        hostile("null", "the test's char device (numbers of /dev/null)");
        hostile("csi.sock", "a regular file named like a socket");
        hostile("live.sock", "a listening socket");
        hostile("link-to-data", "a symlink to a sentinel file");
        hostile("link-to-empty", "a symlink to an empty sentinel dir");
        hostile("link-to-full", "a symlink to a non-empty sentinel dir");
        hostile("dangling", "a dangling symlink into the sentinel dir");
        hostile(sentinel + "/empty/.", "sentinel dir with a trailing '/.'");
        hostile(sentinel + "/data.txt/", "sentinel file with a trailing '/'");
        hostile(sentinel + "/full/new\nline", "a new name with a newline in a sentinel dir");
        hostile(sentinel + "/empty/" + "n".repeat(300), "a 300-byte name");
        hostile(sentinel + "/empty/" + ("d".repeat(200) + "/").repeat(21), "a path over PATH_MAX");
        hostile(evilTarget.toString(), "a symlink at a target path, to a sentinel dir");
        hostile(evilBlock.toString(), "a symlink at a block target path, to a sentinel file");
        hostile(evilStaging.toString(), "a symlink at a staging path, to a sentinel dir");
        Path target = fixtures.getFirst().targets().getFirst();
        hostile(
                target + "/" + target.relativize(sentinel.resolve("empty")),
                "'..' from a target path into the sentinel");
        hostile(
                target.getParent() + "/../../../../../../sentinel/full/new",
                "'..' from a target dir to a new name in the sentinel");
        hostile(target.resolveSibling("vol_data.json").toString(), "kubelet's vol_data.json beside a target");
        hostile(
                fixtures.getFirst().staging().resolveSibling("vol_data.json").toString(),
                "kubelet's vol_data.json beside a staging path");
        hostile(root.toString(), "the test's root dir");
        hostile(kubelet.toString(), "the kubelet dir");
        hostile(cwd.toString(), "the driver's working dir");
        hostile(driverDir.toString(), "the driver's dir");
        hostile(socket().toString(), "the driver's socket");
        hostile(driverDir.resolve("driver.log").toString(), "the driver's log");
        hostile(pool().toString(), "the pool dir");
        hostile(pool().resolve("volumes").toString(), "the pool's volumes dir");
        hostile(pool().resolve("nodes").toString(), "the pool's nodes dir");
        hostile(pool().resolve("volumes/new-target").toString(), "a new name in the pool");
    }

    private void hostile(String pathOrSentinelName, String label) {
        String text = pathOrSentinelName.startsWith("/")
                ? pathOrSentinelName
                : sentinel.resolve(pathOrSentinelName).toString();
        hostile.add(new HostileValues.Value(text, label));
    }

    /** Once the fixtures exist: their image and record files in the pool as targets too. */
    void addPoolFiles(String fixtureName, String volumeId) {
        hostile.add(new HostileValues.Value(
                pool().resolve("volumes/" + volumeId + ".img").toString(), "the image of " + fixtureName));
        hostile.add(new HostileValues.Value(
                pool().resolve("volumes/" + volumeId + ".json").toString(), "the record of " + fixtureName));
    }

    Path root() {
        return root;
    }

    Path sentinel() {
        return sentinel;
    }

    Path cwd() {
        return cwd;
    }

    Path kubelet() {
        return kubelet;
    }

    Path driverDir() {
        return driverDir;
    }

    Path pool() {
        return driverDir.resolve("pool");
    }

    Path socket() {
        return driverDir.resolve("csi.sock");
    }

    List<FixturePaths> fixtures() {
        return fixtures;
    }

    List<Path> inlineTargets() {
        return inlineTargets;
    }

    List<HostileValues.Value> hostilePaths() {
        return hostile;
    }

    List<HostileValues.Value> legitPathValues() {
        return legit;
    }

    boolean isHostilePath(String value) {
        return hostile.stream().anyMatch(v -> v.text().equals(value));
    }

    /** The paths the test itself hands out for mounting: staging and target paths of the kubelet-like tree. */
    boolean isLegitPath(String value) {
        return legit.stream().anyMatch(v -> v.text().equals(value));
    }

    /** What must stay exactly as built: the sentinel tree, the driver's working dir, the driver's socket. */
    TreeSnapshot outside() {
        return TreeSnapshot.of(List.of(sentinel, root.resolve("cwd"), socket()), true);
    }

    TreeSnapshot scratch() {
        return TreeSnapshot.of(List.of(kubelet), true);
    }

    TreeSnapshot poolFiles() {
        return TreeSnapshot.of(List.of(pool()), false);
    }

    /** The pool's record files as they are now: what a request through a path in the pool may wreck. */
    Map<Path, byte[]> poolMetadata() {
        Map<Path, byte[]> records = new HashMap<>();
        try (Stream<Path> files = Files.walk(pool())) {
            for (Path file : files.filter(
                            f -> f.toString().endsWith(".json") && Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS))
                    .toList()) {
                records.put(file, Files.readAllBytes(file));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return records;
    }

    /** A second name for a fixture's image: an image a request deleted comes back as the same file. */
    void keepImage(String volumeId) throws IOException {
        Files.createLink(keptSocket.resolveSibling(volumeId + ".img"), pool().resolve("volumes/" + volumeId + ".img"));
    }

    /** Undoes what a request did to the pool: removes what it added, puts back records and images. */
    void repairPool(List<TreeSnapshot.Change> changes, Map<Path, byte[]> records) {
        List<Path> mounted =
                HostView.mounts().stream().map(HostView.Mount::mountPoint).toList();
        try {
            for (TreeSnapshot.Change change : changes.reversed()) {
                Path path = change.path();
                if ((change.before() == null || records.containsKey(path))
                        && mounted.stream().noneMatch(m -> m.startsWith(path))) {
                    deleteTree(path);
                }
                Path keptImage = keptSocket.resolveSibling(path.getFileName().toString());
                if (records.containsKey(path)) {
                    Files.write(path, records.get(path));
                } else if (change.after() == null && Files.exists(keptImage, LinkOption.NOFOLLOW_LINKS)) {
                    Files.createLink(path, keptImage);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    void build() throws IOException {
        Files.createDirectories(driverDir);
        Files.createDirectories(keptSocket.getParent());
        ensureAll();
    }

    /** Once the driver listens: a second name for its socket, from which a removed socket can be restored. */
    void keepSocket() throws IOException {
        Files.deleteIfExists(keptSocket);
        Files.createLink(keptSocket, socket());
    }

    /** Puts the sentinel tree, the driver's working dir and the driver's socket back as they were. */
    void repairOutside(Collection<Path> extras) {
        repair(extras, List.of(sentinel, root.resolve("cwd")));
    }

    /** Puts the scratch kubelet tree back as it was built, legit paths the driver removed included. */
    void repairScratch(Collection<Path> extras) {
        repair(extras, List.of(kubelet));
    }

    /**
     * Removes what was added at {@code extras} (never following symlinks, never below a mount
     * point) and remakes every object below {@code scope} that differs from its recipe. The
     * driver's socket comes back through its hard link.
     */
    private void repair(Collection<Path> extras, List<Path> scope) {
        List<Path> mounted = HostView.mounts().stream()
                .map(HostView.Mount::mountPoint)
                .filter(p -> p.startsWith(root))
                .toList();
        for (Path extra : extras) {
            if (extra.startsWith(root)
                    && recipes.stream().noneMatch(r -> r.path().equals(extra))
                    && mounted.stream().noneMatch(m -> m.startsWith(extra))) {
                deleteTree(extra);
            }
        }
        try {
            for (Recipe recipe : recipes) {
                if (scope.stream().anyMatch(recipe.path()::startsWith)) {
                    ensure(recipe);
                }
            }
            if (Files.exists(keptSocket, LinkOption.NOFOLLOW_LINKS) && !isType(socket(), 0140000)) {
                deleteTree(socket());
                Files.createLink(socket(), keptSocket);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void ensureAll() {
        try {
            for (Recipe recipe : recipes) {
                ensure(recipe);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void ensure(Recipe recipe) throws IOException {
        Path path = recipe.path();
        if (matches(recipe)) {
            return;
        }
        if (Files.exists(path, LinkOption.NOFOLLOW_LINKS) && !(recipe instanceof Dir && isType(path, 0040000))) {
            deleteTree(path);
        }
        Files.createDirectories(path.getParent());
        switch (recipe) {
            case Dir d -> {
                Files.createDirectories(path);
                Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rwxr-xr-x"));
            }
            case DataFile f -> {
                Files.writeString(path, f.content(), StandardCharsets.UTF_8);
                Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rw-r--r--"));
            }
            case Link l -> Files.createSymbolicLink(path, l.target());
            case Fifo f -> require(HostView.run("mkfifo", "-m", "600", path.toString()), "mkfifo " + path);
            case CharDevice c ->
                require(
                        HostView.run(
                                "mknod",
                                "-m",
                                "600",
                                path.toString(),
                                "c",
                                String.valueOf(major(c.rdev())),
                                String.valueOf(minor(c.rdev()))),
                        "mknod " + path);
            case Socket s -> {
                if (liveSocket != null) {
                    liveSocket.close();
                }
                liveSocket = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
                liveSocket.bind(UnixDomainSocketAddress.of(path));
            }
        }
    }

    private boolean matches(Recipe recipe) throws IOException {
        Path path = recipe.path();
        if (!Files.exists(path, LinkOption.NOFOLLOW_LINKS)) {
            return false;
        }
        return switch (recipe) {
            case Dir d -> isType(path, 0040000) && mode(path) == 0755;
            case DataFile f ->
                isType(path, 0100000)
                        && mode(path) == 0644
                        && Files.readString(path, StandardCharsets.UTF_8).equals(f.content());
            case Link l ->
                Files.isSymbolicLink(path) && Files.readSymbolicLink(path).equals(l.target());
            case Fifo f -> isType(path, 0010000) && mode(path) == 0600;
            case CharDevice c ->
                isType(path, 0020000)
                        && mode(path) == 0600
                        && Files.getAttribute(path, "unix:rdev", LinkOption.NOFOLLOW_LINKS)
                                .equals(c.rdev());
            case Socket s -> isType(path, 0140000);
        };
    }

    private static boolean isType(Path path, int type) {
        try {
            return ((Integer) Files.getAttribute(path, "unix:mode", LinkOption.NOFOLLOW_LINKS) & 0170000) == type;
        } catch (IOException e) {
            return false;
        }
    }

    private static int mode(Path path) throws IOException {
        return (Integer) Files.getAttribute(path, "unix:mode", LinkOption.NOFOLLOW_LINKS) & 07777;
    }

    /** Deletes a file or a tree without following symlinks (Files.walkFileTree does not follow them). */
    static void deleteTree(Path path) {
        try {
            Files.walkFileTree(path, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                    Files.deleteIfExists(file);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path dir, IOException e) throws IOException {
                    Files.deleteIfExists(dir);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (NoSuchFileException e) {
            // already gone
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The device number of /dev/null, read (never opened) so the test's own node gets the same one. */
    private static long devNullNumber() {
        try {
            return (Long) Files.getAttribute(Path.of("/dev/null"), "unix:rdev");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static long major(long rdev) {
        return ((rdev >>> 8) & 0xfff) | ((rdev >>> 32) & ~0xfffL);
    }

    private static long minor(long rdev) {
        return (rdev & 0xff) | ((rdev >>> 12) & ~0xffL);
    }

    private static void require(boolean ok, String what) throws IOException {
        if (!ok) {
            throw new IOException(what + " failed");
        }
    }

    @Override
    public void close() throws IOException {
        if (liveSocket != null) {
            liveSocket.close();
        }
    }
}
