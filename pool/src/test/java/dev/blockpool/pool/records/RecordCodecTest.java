package dev.blockpool.pool.records;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import dev.blockpool.pool.records.RecordCodec.Field;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A record whose own constructor refuses the values read is invalid as a whole, wherever it is. */
class RecordCodecTest {

    record Span(long from, long to) {
        Span {
            if (from > to) {
                throw new IllegalArgumentException("a span ends after it starts");
            }
        }
    }

    record Spans(List<Span> spans) {}

    private static final Field<Span, Long> FROM = Field.required("from", Span::from, ValueCodec.LONG);
    private static final Field<Span, Long> TO = Field.required("to", Span::to, ValueCodec.LONG);
    private static final RecordCodec<Span> SPAN =
            new RecordCodec<>(List.of(FROM, TO), values -> new Span(values.get(FROM), values.get(TO)));
    private static final Field<Spans, List<Span>> SPANS =
            Field.required("spans", Spans::spans, ValueCodec.listOf(SPAN));
    private static final RecordCodec<Spans> ALL =
            new RecordCodec<>(List.of(SPANS), values -> new Spans(values.get(SPANS)));

    @Test
    void aRecordThatRefusesItsValuesIsInvalidAsAWhole() throws IOException {
        InvalidField invalid =
                catchThrowableOfType(InvalidField.class, () -> read(SPAN, "{ \"from\" : 2, \"to\" : 1 }"));

        assertThat(invalid.path()).isEmpty();
        assertThat(invalid.getCause()).hasMessage("a span ends after it starts");
        assertThat(read(SPAN, "{ \"to\" : 2, \"from\" : 1 }")).isEqualTo(new Span(1, 2));
    }

    @Test
    void aRecordThatRefusesItsValuesIsNamedByItsPath() {
        InvalidField invalid = catchThrowableOfType(
                InvalidField.class,
                () -> read(ALL, "{ \"spans\" : [ { \"from\" : 1, \"to\" : 2 }, { \"from\" : 2, \"to\" : 1 } ] }"));

        assertThat(invalid.path()).isEqualTo("spans[1]");
        assertThat(invalid.getCause()).hasMessage("a span ends after it starts");
    }

    private static <T> T read(RecordCodec<T> codec, String json) throws IOException {
        try (JsonParser in = new JsonFactory().createParser(json)) {
            in.nextToken();
            return codec.read(in);
        }
    }
}
