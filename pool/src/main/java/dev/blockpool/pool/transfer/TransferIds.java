package dev.blockpool.pool.transfer;

import dev.blockpool.common.Quoting;
import dev.blockpool.common.StorageException;
import dev.blockpool.pool.ContentSource;
import dev.blockpool.pool.Ids;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * The names a transfer's files are made of, checked before they reach a path: a transfer ID,
 * which another node sends, and the ID of the snapshot or volume it asks for.
 */
public final class TransferIds {

    /** Lowercase letters, digits and dashes: no dot, which separates a transfer's files' names from their ID. */
    private static final Pattern TRANSFER_ID = Pattern.compile("[a-z0-9][a-z0-9-]{0,62}");

    private TransferIds() {}

    /** The transfer that fills the volume {@code targetVolumeId}: one per target, whichever node pulls it. */
    public static String forVolume(String targetVolumeId) {
        return requireVolumeId(targetVolumeId);
    }

    /** INVALID unless {@code transferId} is 1-63 lowercase letters, digits or dashes. */
    public static String require(String transferId) {
        if (!TRANSFER_ID.matcher(transferId).matches()) {
            throw StorageException.invalid(
                    "transfer ID %s must be 1-63 lowercase letters, digits or '-', starting with a letter or digit",
                    Quoting.quote(transferId));
        }
        return transferId;
    }

    /** NOT_FOUND unless the source's ID is one this driver could have issued for its kind. */
    static ContentSource requireSource(ContentSource source) {
        boolean issued = source.kind() == ContentSource.Kind.SNAPSHOT
                ? Ids.isSnapshotId(source.id())
                : Ids.isVolumeId(source.id());
        if (!issued) {
            throw StorageException.notFound("%s does not exist", describe(source));
        }
        return source;
    }

    static String requireVolumeId(String volumeId) {
        if (!Ids.isVolumeId(volumeId)) {
            throw StorageException.invalid("%s is not a volume ID of this driver", Quoting.quote(volumeId));
        }
        return volumeId;
    }

    /** "snapshot S" or "volume V", as messages name a source. */
    static String describe(ContentSource source) {
        return source.kind().name().toLowerCase(Locale.ROOT) + " " + Quoting.quote(source.id());
    }
}
