package dev.blockpool.common;

import java.util.Arrays;
import java.util.Optional;

/** The filesystems the driver formats, checks, mounts and grows. */
public enum FsType {
    /** The smallest device each mkfs accepts: xfsprogs refuses filesystems under 300 MiB. */
    EXT4("ext4", 1L << 20),
    XFS("xfs", 300L << 20);

    private final String name;
    private final long minimumBytes;

    FsType(String name, long minimumBytes) {
        this.name = name;
        this.minimumBytes = minimumBytes;
    }

    /** The smallest volume this filesystem can be made on. */
    public long minimumBytes() {
        return minimumBytes;
    }

    public String fsName() {
        return name;
    }

    public static Optional<FsType> find(String name) {
        for (FsType type : values()) {
            if (type.name.equals(name)) {
                return Optional.of(type);
            }
        }
        return Optional.empty();
    }

    /** INVALID when the name is not one of {@link #supported()}. */
    public static FsType parse(String name) {
        return find(name)
                .orElseThrow(() -> StorageException.invalid(
                        "fs type %s is not supported: use %s", Quoting.quote(name), supported()));
    }

    /** The supported names, for messages: "ext4 or xfs". */
    public static String supported() {
        return String.join(" or ", Arrays.stream(values()).map(FsType::fsName).toList());
    }

    @Override
    public String toString() {
        return name;
    }
}
