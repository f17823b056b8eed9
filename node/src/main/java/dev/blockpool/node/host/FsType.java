package dev.blockpool.node.host;

import dev.blockpool.common.CsiException;
import java.util.Locale;
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
            if (type.name.equals(name.toLowerCase(Locale.ROOT))) {
                return Optional.of(type);
            }
        }
        return Optional.empty();
    }

    public static FsType parse(String name) {
        return find(name).orElseThrow(() -> CsiException.invalidArgument(
                "fs_type \"%s\" is not supported: use ext4 or xfs", name));
    }

    @Override
    public String toString() {
        return name;
    }
}
