package dev.blockpool.pool.transfer;

import static dev.blockpool.pool.records.ValueCodec.LONG;
import static dev.blockpool.pool.records.ValueCodec.STRING;

import dev.blockpool.pool.ContentSource;
import dev.blockpool.pool.RecordCodecs;
import dev.blockpool.pool.records.RecordCodec;
import dev.blockpool.pool.records.RecordCodec.Field;
import java.util.List;
import java.util.Optional;

/** The records of transfers on disk, each field named here once: an export's in outgoing/, a pull's in incoming/. */
final class TransferRecords {

    private TransferRecords() {}

    /**
     * What an export froze of a volume ({@code outgoing/<transfer-id>.json}): the round a pull
     * reads now, and the round before it, which the destination holds and names as its basis.
     */
    record Export(ContentSource source, Frozen current, Optional<Frozen> basis) {}

    /** One frozen copy, {@code outgoing/<transfer-id>.<round>.img}: its size and identity as frozen. */
    record Frozen(long round, long sizeBytes, String identity) {}

    /**
     * How far a pull has come ({@code incoming/<volume-id>.json}): every byte of the image below
     * {@code doneBytes} is as the source's image {@code identity}, and flushed. With {@code basis},
     * a delta round under way: the image held the source's image {@code basis} whole, and only the
     * ranges changed since are being written over it, so the bytes from {@code doneBytes} on are
     * a mix of the two until the round finishes (the basis is then dropped from the record).
     */
    record Pull(
            String node,
            ContentSource source,
            String identity,
            long sizeBytes,
            long doneBytes,
            Optional<String> basis) {

        boolean finished() {
            return doneBytes == sizeBytes;
        }

        /** Whether {@code other} pulls the same image: the same source, identity and size, from whichever node. */
        boolean ofSameImage(Pull other) {
            return source.equals(other.source) && identity.equals(other.identity) && sizeBytes == other.sizeBytes;
        }

        /** Done up to {@code offset}: once the whole image is, it is the source's image alone, of no basis. */
        Pull at(long offset) {
            return new Pull(node, source, identity, sizeBytes, offset, offset == sizeBytes ? Optional.empty() : basis);
        }
    }

    private static final class FrozenFields {
        static final Field<Frozen, Long> ROUND = Field.required("round", Frozen::round, LONG);
        static final Field<Frozen, Long> SIZE = Field.required("sizeBytes", Frozen::sizeBytes, LONG);
        static final Field<Frozen, String> IDENTITY = Field.required("identity", Frozen::identity, STRING);

        static final RecordCodec<Frozen> CODEC = new RecordCodec<>(
                List.of(ROUND, SIZE, IDENTITY),
                values -> new Frozen(values.get(ROUND), values.get(SIZE), values.get(IDENTITY)));
    }

    private static final class ExportFields {
        static final Field<Export, ContentSource> SOURCE =
                Field.required("source", Export::source, RecordCodecs.CONTENT_SOURCE);
        static final Field<Export, Frozen> CURRENT = Field.required("current", Export::current, FrozenFields.CODEC);
        static final Field<Export, Optional<Frozen>> BASIS = Field.optional("basis", Export::basis, FrozenFields.CODEC);
    }

    static final RecordCodec<Export> EXPORT = new RecordCodec<>(
            List.of(ExportFields.SOURCE, ExportFields.CURRENT, ExportFields.BASIS),
            values -> new Export(
                    values.get(ExportFields.SOURCE), values.get(ExportFields.CURRENT), values.get(ExportFields.BASIS)));

    private static final class PullFields {
        static final Field<Pull, String> NODE = Field.required("node", Pull::node, STRING);
        static final Field<Pull, ContentSource> SOURCE =
                Field.required("source", Pull::source, RecordCodecs.CONTENT_SOURCE);
        static final Field<Pull, String> IDENTITY = Field.required("identity", Pull::identity, STRING);
        static final Field<Pull, Long> SIZE = Field.required("sizeBytes", Pull::sizeBytes, LONG);
        static final Field<Pull, Long> DONE = Field.required("doneBytes", Pull::doneBytes, LONG);
        static final Field<Pull, Optional<String>> BASIS = Field.optional("basis", Pull::basis, STRING);
    }

    static final RecordCodec<Pull> PULL = new RecordCodec<>(
            List.of(
                    PullFields.NODE,
                    PullFields.SOURCE,
                    PullFields.IDENTITY,
                    PullFields.SIZE,
                    PullFields.DONE,
                    PullFields.BASIS),
            values -> new Pull(
                    values.get(PullFields.NODE),
                    values.get(PullFields.SOURCE),
                    values.get(PullFields.IDENTITY),
                    values.get(PullFields.SIZE),
                    values.get(PullFields.DONE),
                    values.get(PullFields.BASIS)));
}
