package dev.blockpool.systemtest;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.Supplier;

/**
 * The strings the fuzz test puts into request fields, each with a short label for the report.
 * Absolute paths are only ever paths below the test's own directory (the sentinel tree, the
 * scratch kubelet tree, the pool, the driver's socket): nothing here names a host path, so a
 * driver that mounts or deletes whatever it is given can only hit the test's own files.
 */
final class HostileValues {

    /** A value and how the report names it. */
    record Value(String text, String label) {
        @Override
        public String toString() {
            return label;
        }
    }

    /** What kind of field a value goes into: each kind gets its own share of the values that fit it. */
    enum Kind {
        PATH,
        ID,
        FS_TYPE,
        MOUNT_FLAG,
        MAP_KEY,
        OTHER
    }

    private static final String HUGE_10K = "a".repeat(10 * 1024);
    private static final String HUGE_1M = "b".repeat(1024 * 1024);

    private final Random random;
    private final List<Value> general = new ArrayList<>();
    private final List<Value> fsTypes = new ArrayList<>();
    private final List<Value> mountFlags = new ArrayList<>();
    private final List<Value> mapKeys = new ArrayList<>();
    private final Supplier<List<Value>> hostilePaths;
    private final Supplier<List<Value>> legitPaths;
    private final Supplier<List<Value>> realIds;

    HostileValues(Random random, FuzzTree tree, Supplier<List<Value>> realIds) {
        this.random = random;
        this.hostilePaths = tree::hostilePaths;
        this.legitPaths = tree::legitPathValues;
        this.realIds = realIds;
        String sentinel = tree.sentinel().toString();

        add(general, "", "empty");
        add(general, HUGE_10K, "10 KiB of 'a'");
        add(general, "v".repeat(128), "128 bytes (the ID limit)");
        add(general, "w".repeat(129), "129 bytes");
        add(general, "💾".repeat(40), "40 emoji (160 bytes, 80 chars)");
        add(general, "ボリューム-名前", "unicode");
        add(general, "e\u0301\u0308\u20dd", "combining marks");
        add(general, "\u202etxt.exe", "right-to-left override");
        add(general, "\ufeffext4", "byte order mark");
        add(general, "\udbff\udfff\ufffe", "the last code point and a noncharacter");
        add(general, "\u0000", "NUL");
        add(general, "a\u0000b", "NUL inside");
        add(general, "line1\nline2", "newline");
        add(general, "\r\n\t\u000b\u000c", "control characters");
        add(general, "\u001b[31mred\u001b[0m\u0007", "terminal escape");
        add(general, "\u2028\u0085", "unicode line separators");
        add(general, ".", "'.'");
        add(general, "..", "'..'");
        add(general, "../../x", "'../../x'");
        add(general, "../../../../../../x", "six '..' up");
        add(general, "x/../../y", "'x/../../y'");
        add(general, "%s%s%s%n%x", "format string");
        add(general, "{}{}", "log placeholders");
        add(general, "${env:PATH}${jndi:dns:x}", "lookup string");
        add(general, "$(touch " + sentinel + "/pwned)", "shell substitution");
        add(general, "`touch " + sentinel + "/pwned`", "backticks");
        add(general, "x; touch " + sentinel + "/pwned", "shell separator");
        add(general, "--help", "an option");
        add(general, "-o loop", "an option with value");
        add(general, "'\"\\", "quotes and backslash");
        add(general, "*?[", "glob characters");
        add(general, "-1", "-1");
        add(general, "0", "0");
        add(general, "9223372036854775808", "2^63");
        add(general, "1e309", "1e309");
        add(general, "NaN", "NaN");
        add(general, "99999999999Ei", "99999999999Ei");
        add(general, "-16Mi", "-16Mi");
        add(general, "1.5Gi", "1.5Gi");
        add(general, " 16Mi\n", "padded quantity");
        add(general, "true", "true");
        add(general, "TRUE", "TRUE");
        add(general, "csi.storage.k8s.io/ephemeral", "the ephemeral key");

        add(fsTypes, "ext4", "ext4");
        add(fsTypes, "xfs", "xfs");
        add(fsTypes, "EXT4", "EXT4");
        add(fsTypes, " ext4", "' ext4'");
        add(fsTypes, "ext4,xfs", "ext4,xfs");
        add(fsTypes, "ext2", "ext2");
        add(fsTypes, "btrfs", "btrfs");
        add(fsTypes, "tmpfs", "tmpfs");
        add(fsTypes, "proc", "proc");
        add(fsTypes, "bind", "bind");
        add(fsTypes, "none", "none");
        add(fsTypes, "auto", "auto");
        add(fsTypes, "fuse.sshfs", "fuse.sshfs");
        add(fsTypes, "../ext4", "../ext4");

        add(mountFlags, "ro", "ro");
        add(mountFlags, "bind", "bind");
        add(mountFlags, "rbind", "rbind");
        add(mountFlags, "remount", "remount");
        add(mountFlags, "ro,remount,rw", "ro,remount,rw");
        add(mountFlags, "loop", "loop");
        add(mountFlags, "loop=" + sentinel + "/data.txt,offset=0", "loop onto a sentinel file");
        add(mountFlags, "x-mount.mkdir=0777", "x-mount.mkdir");
        add(mountFlags, "nosuid,suid,dev,exec", "suid,dev,exec");
        add(mountFlags, "data=journal", "data=journal");
        add(mountFlags, "journal_path=" + sentinel + "/null", "journal_path onto the test's device node");
        add(mountFlags, "usrjquota=" + sentinel + "/data.txt", "usrjquota");
        add(mountFlags, "uid=0,gid=0,mode=4777", "uid,gid,mode");
        add(mountFlags, "context=system_u:object_r:etc_t:s0", "selinux context");
        add(mountFlags, "noexec,", "trailing comma");
        add(mountFlags, ",,,", "only commas");
        add(mountFlags, "ro\nrw", "newline between flags");

        for (String key : new String[] {
            "fsType",
            "allocation",
            "size",
            "readonly",
            "csi.storage.k8s.io/ephemeral",
            "csi.storage.k8s.io/pod.name",
            "csi.storage.k8s.io/pvc/name",
            "topology.blockpool.csi.dev/node",
            "storage.kubernetes.io/csiProvisionerIdentity"
        }) {
            add(mapKeys, key, "key " + key);
        }
    }

    private static void add(List<Value> values, String text, String label) {
        values.add(new Value(text, label));
    }

    /** A hostile value for a field of {@code kind}; some values are rare because they are expensive to send. */
    Value next(Kind kind) {
        int roll = random.nextInt(100);
        if (roll == 0) {
            return new Value(HUGE_1M, "1 MiB of 'b'");
        }
        return switch (kind) {
            case PATH ->
                roll < 55
                        ? pick(hostilePaths.get())
                        : roll < 70 ? pick(legitPaths.get()) : roll < 80 ? pick(realIds.get()) : pick(general);
            case ID -> roll < 40 ? pick(realIds.get()) : roll < 55 ? pick(hostilePaths.get()) : pick(general);
            case FS_TYPE -> roll < 50 ? pick(fsTypes) : roll < 60 ? pick(hostilePaths.get()) : pick(general);
            case MOUNT_FLAG -> roll < 55 ? pick(mountFlags) : roll < 65 ? pick(hostilePaths.get()) : pick(general);
            case MAP_KEY -> roll < 30 ? pick(mapKeys) : roll < 40 ? pick(hostilePaths.get()) : pick(general);
            case OTHER ->
                roll < 15
                        ? pick(hostilePaths.get())
                        : roll < 25 ? pick(realIds.get()) : roll < 35 ? pick(fsTypes) : pick(general);
        };
    }

    /** A well-known key for a map entry whose value is the hostile part. */
    String knownKey() {
        return pick(mapKeys).text();
    }

    private Value pick(List<Value> values) {
        return values.isEmpty() ? general.getFirst() : values.get(random.nextInt(values.size()));
    }
}
