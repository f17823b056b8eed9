package dev.blockpool.pool.records;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.ToIntFunction;
import java.util.stream.Collectors;

/**
 * A record as a JSON object of its {@link Field}s, written in the order they are listed, read in
 * any order. Fields the record does not have are skipped (the {@code formatVersion} beside them,
 * and whatever a newer driver adds that an older one may ignore), a field that appears twice
 * counts once, with its last value.
 */
public final class RecordCodec<R> implements ValueCodec<R> {

    private final List<Field<R, ?>> fields;
    private final Map<String, Field<R, ?>> byName;
    private final Function<Values, R> construct;
    private final ToIntFunction<R> formatVersion;

    /** {@code construct} makes the record from its fields' values, each got with {@link Values#get}. */
    public RecordCodec(List<Field<R, ?>> fields, Function<Values, R> construct) {
        this(fields, construct, record -> RecordFormat.UNVERSIONED);
    }

    /**
     * A codec of records of which some need a newer {@link RecordFormat} than others:
     * {@code formatVersion} says which a record needs, the oldest that holds it as an older driver
     * must understand it.
     */
    public RecordCodec(List<Field<R, ?>> fields, Function<Values, R> construct, ToIntFunction<R> formatVersion) {
        this.fields = List.copyOf(fields);
        this.byName = fields.stream().collect(Collectors.toUnmodifiableMap(Field::name, Function.identity()));
        this.construct = construct;
        this.formatVersion = formatVersion;
    }

    /** The oldest format that holds {@code record} as an older driver must understand it. */
    int formatVersion(R record) {
        return formatVersion.applyAsInt(record);
    }

    @Override
    public void write(JsonGenerator out, R record) throws IOException {
        out.writeStartObject();
        writeFields(out, record);
        out.writeEndObject();
    }

    /** The record's fields, into an object already started. */
    void writeFields(JsonGenerator out, R record) throws IOException {
        for (Field<R, ?> field : fields) {
            field.write(out, record);
        }
    }

    @Override
    public R read(JsonParser in) throws IOException {
        ValueCodec.require(in, JsonToken.START_OBJECT);
        Map<String, Object> values = new HashMap<>();
        while (in.nextToken() == JsonToken.FIELD_NAME) {
            Field<R, ?> field = byName.get(in.currentName());
            JsonToken token = in.nextToken();
            if (field == null) {
                in.skipChildren();
            } else if (token == JsonToken.VALUE_NULL) {
                values.remove(field.name());
            } else {
                values.put(field.name(), field.read(in));
            }
        }
        for (Field<R, ?> field : fields) {
            if (!values.containsKey(field.name())) {
                values.put(field.name(), field.whenAbsent().orElseThrow(() -> new InvalidField().in(field.name())));
            }
        }
        try {
            return construct.apply(new Values(values));
        } catch (IllegalArgumentException e) {
            throw new InvalidField(e);
        }
    }

    /**
     * One field of a record {@code R}: its name on disk, the record's accessor of its value, how
     * the value is written and read, what a record has when the field is absent or null, if it
     * may be (when it may not, the record is invalid), and whether a record with that value
     * leaves the field out.
     */
    public record Field<R, V>(
            String name, Function<R, V> accessor, ValueCodec<V> codec, Optional<V> whenAbsent, boolean omitWhenAbsent) {

        /** A field every record has written. */
        public static <R, V> Field<R, V> required(String name, Function<R, V> accessor, ValueCodec<V> codec) {
            return new Field<>(name, accessor, codec, Optional.empty(), false);
        }

        /** A field written as its value or null, that reads as empty when absent or null. */
        public static <R, V> Field<R, Optional<V>> optional(
                String name, Function<R, Optional<V>> accessor, ValueCodec<V> codec) {
            return new Field<>(name, accessor, ValueCodec.optional(codec), Optional.of(Optional.empty()), false);
        }

        /** A field records written before it existed lack: in them it has the value {@code whenAbsent}. */
        public static <R, V> Field<R, V> since(
                String name, Function<R, V> accessor, ValueCodec<V> codec, V whenAbsent) {
            return new Field<>(name, accessor, codec, Optional.of(whenAbsent), false);
        }

        /**
         * Like {@link #since}, but not written at all when its value is {@code whenAbsent}: a record
         * that does not use the field is written as before it existed.
         */
        public static <R, V> Field<R, V> omittedWhen(
                String name, Function<R, V> accessor, ValueCodec<V> codec, V whenAbsent) {
            return new Field<>(name, accessor, codec, Optional.of(whenAbsent), true);
        }

        void write(JsonGenerator out, R record) throws IOException {
            V value = accessor.apply(record);
            if (omitWhenAbsent && whenAbsent.equals(Optional.ofNullable(value))) {
                return;
            }
            try {
                if (value == null) {
                    throw new InvalidField(); // written as null, it would read as a damaged record
                }
                out.writeFieldName(name);
                codec.write(out, value);
            } catch (InvalidField e) {
                throw e.in(name);
            }
        }

        V read(JsonParser in) throws IOException {
            try {
                return codec.read(in);
            } catch (InvalidField e) {
                throw e.in(name);
            }
        }
    }

    /** The values read for a record's fields. */
    public record Values(Map<String, Object> byName) {

        @SuppressWarnings("unchecked") // each value was read by the field's own codec
        public <V> V get(Field<?, V> field) {
            return (V) byName.get(field.name());
        }
    }
}
