package dev.blockpool.common;

import java.util.Arrays;
import java.util.Optional;

/** The filesystems the driver formats, checks, mounts and grows. */
public enum FsType {
    EXT4("ext4"), XFS("xfs");

    private final String name;

    FsType(String name) {
        this.name = name;
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
        return find(name).orElseThrow(() -> StorageException.invalid(
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
