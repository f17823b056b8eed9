package dev.blockpool.host.filesystems;

import dev.blockpool.common.FsType;
import java.util.List;
import java.util.Optional;

/**
 * How a volume's filesystem is to be mounted.
 *
 * @param requestedType the type the request names; the volume must hold it, or be empty
 * @param defaultType   what an empty volume is formatted with when the request names none
 * @param flags         allow-listed filesystem flags, without "ro"/"rw"
 * @param readOnly      whether the mount is read-only
 */
public record FilesystemRequest(
        Optional<FsType> requestedType, FsType defaultType, List<String> flags, boolean readOnly) {

    public FilesystemRequest {
        flags = List.copyOf(flags);
    }
}
