package dev.blockpool.peer;

import dev.blockpool.csi.CsiException;
import dev.blockpool.peer.v1.Range;
import dev.blockpool.peer.v1.Source;
import dev.blockpool.peer.v1.Transfer;
import dev.blockpool.pool.ContentSource;
import dev.blockpool.pool.extents.ByteRange;
import java.util.Locale;
import java.util.Optional;

/** The peer protocol's messages to the pool's terms and back, and what makes a request well-formed. */
final class Wire {

    /** The longest ID taken: far above any the driver makes, and it bounds what a request names. */
    static final int MOST_ID_CHARS = 256;
    /** The most ranges one Ranges call answers. */
    static final int MOST_RANGES = 4096;

    private Wire() {}

    static Source source(ContentSource source) {
        return Source.newBuilder()
                .setKind(
                        switch (source.kind()) {
                            case SNAPSHOT -> Source.Kind.SNAPSHOT;
                            case VOLUME -> Source.Kind.VOLUME;
                        })
                .setId(source.id())
                .build();
    }

    static ContentSource source(Source source) {
        String id = id("source id", source.getId());
        return switch (source.getKind()) {
            case SNAPSHOT -> ContentSource.snapshot(id);
            case VOLUME -> ContentSource.volume(id);
            default -> throw CsiException.invalidArgument("the source's kind is neither a snapshot nor a volume");
        };
    }

    static Transfer transfer(ContentSource source, String transferId, Optional<String> basis) {
        Transfer.Builder transfer =
                Transfer.newBuilder().setSource(source(source)).setTransferId(transferId);
        basis.ifPresent(transfer::setBasis);
        return transfer.build();
    }

    static String transferId(Transfer transfer) {
        return id("transfer id", transfer.getTransferId());
    }

    static Optional<String> basis(Transfer transfer) {
        return transfer.hasBasis() ? Optional.of(id("basis", transfer.getBasis())) : Optional.empty();
    }

    static Range range(ByteRange range) {
        return Range.newBuilder()
                .setOffset(range.offset())
                .setLength(range.length())
                .build();
    }

    static ByteRange range(Range range) {
        return new ByteRange(range.getOffset(), range.getLength());
    }

    static String id(String what, String value) {
        if (value.isEmpty()) {
            throw CsiException.invalidArgument("the %s is missing", what);
        }
        if (value.length() > MOST_ID_CHARS) {
            throw CsiException.invalidArgument("the %s is longer than %d characters", what, MOST_ID_CHARS);
        }
        return value;
    }

    static String describe(ContentSource source) {
        return source.kind().name().toLowerCase(Locale.ROOT) + " " + source.id();
    }
}
