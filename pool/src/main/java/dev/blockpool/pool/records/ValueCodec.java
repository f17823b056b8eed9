package dev.blockpool.pool.records;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.time.DateTimeException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * One kind of value in a record on disk, written and read over jackson-core's streaming API.
 * {@link #read} starts at the value's first token and ends at its last; a value of another shape,
 * a JSON null included, is an {@link InvalidField}. (A field's null is handled by its record: see
 * {@link RecordCodec.Field}.)
 */
public interface ValueCodec<V> {

    void write(JsonGenerator out, V value) throws IOException;

    V read(JsonParser in) throws IOException;

    ValueCodec<String> STRING = of(JsonGenerator::writeString, in -> {
        require(in, JsonToken.VALUE_STRING);
        return in.getText();
    });

    ValueCodec<Long> LONG = of((out, value) -> out.writeNumber(value.longValue()), in -> {
        require(in, JsonToken.VALUE_NUMBER_INT);
        if (in.getNumberType() == JsonParser.NumberType.BIG_INTEGER) {
            throw new InvalidField();
        }
        return in.getLongValue();
    });

    ValueCodec<Boolean> BOOLEAN = of(JsonGenerator::writeBoolean, in -> {
        if (!in.currentToken().isBoolean()) {
            throw new InvalidField();
        }
        return in.getBooleanValue();
    });

    /** ISO-8601 in UTC with as many fraction digits as it needs, as Jackson's JavaTimeModule wrote it. */
    ValueCodec<Instant> INSTANT = STRING.converted(Instant::toString, Instant::parse);

    /** A constant by its name. */
    static <E extends Enum<E>> ValueCodec<E> enumOf(Class<E> type) {
        return STRING.converted(Enum::name, name -> Enum.valueOf(type, name));
    }

    static <E> ValueCodec<List<E>> listOf(ValueCodec<E> element) {
        return of(
                (out, list) -> {
                    out.writeStartArray();
                    for (int index = 0; index < list.size(); index++) {
                        try {
                            element.write(out, list.get(index));
                        } catch (InvalidField e) {
                            throw e.at(index);
                        }
                    }
                    out.writeEndArray();
                },
                in -> {
                    require(in, JsonToken.START_ARRAY);
                    List<E> list = new ArrayList<>();
                    while (in.nextToken() != JsonToken.END_ARRAY) {
                        try {
                            list.add(element.read(in));
                        } catch (InvalidField e) {
                            throw e.at(list.size());
                        }
                    }
                    return list;
                });
    }

    /**
     * An array, written in the elements' natural order: a set of Set.copyOf has an order of its
     * own in every JVM, and a record's file should not change with it.
     */
    static <E extends Comparable<? super E>> ValueCodec<Set<E>> setOf(ValueCodec<E> element) {
        return listOf(element).converted(set -> set.stream().sorted().toList(), Set::copyOf);
    }

    /** An object with a value of {@code value}'s kind per key, written in the keys' order, as {@link #setOf}. */
    static <V> ValueCodec<Map<String, V>> mapOf(ValueCodec<V> value) {
        return of(
                (out, map) -> {
                    out.writeStartObject();
                    for (Map.Entry<String, V> entry : new TreeMap<>(map).entrySet()) {
                        out.writeFieldName(entry.getKey());
                        try {
                            value.write(out, entry.getValue());
                        } catch (InvalidField e) {
                            throw e.in(entry.getKey());
                        }
                    }
                    out.writeEndObject();
                },
                in -> {
                    require(in, JsonToken.START_OBJECT);
                    Map<String, V> map = new LinkedHashMap<>();
                    while (in.nextToken() == JsonToken.FIELD_NAME) {
                        String key = in.currentName();
                        in.nextToken();
                        try {
                            map.put(key, value.read(in));
                        } catch (InvalidField e) {
                            throw e.in(key);
                        }
                    }
                    return map;
                });
    }

    /** The value, or null when empty; a null is read by the field that holds it (as empty). */
    static <V> ValueCodec<Optional<V>> optional(ValueCodec<V> present) {
        return of(
                (out, value) -> {
                    if (value.isPresent()) {
                        present.write(out, value.get());
                    } else {
                        out.writeNull();
                    }
                },
                in -> Optional.of(present.read(in)));
    }

    /**
     * This codec for values of another type, converted to this one to be written and back when
     * read; a value the conversion refuses is invalid.
     */
    default <U> ValueCodec<U> converted(Function<U, V> toJson, Function<V, U> fromJson) {
        return of((out, value) -> write(out, toJson.apply(value)), in -> {
            V value = read(in);
            try {
                return fromJson.apply(value);
            } catch (IllegalArgumentException | DateTimeException e) { // what Enum.valueOf and Instant.parse throw
                throw new InvalidField();
            }
        });
    }

    /** The codec that writes with {@code write} and reads with {@code read}. */
    static <V> ValueCodec<V> of(Write<V> write, Read<V> read) {
        return new ValueCodec<>() {
            @Override
            public void write(JsonGenerator out, V value) throws IOException {
                write.write(out, value);
            }

            @Override
            public V read(JsonParser in) throws IOException {
                return read.read(in);
            }
        };
    }

    @FunctionalInterface
    interface Write<V> {
        void write(JsonGenerator out, V value) throws IOException;
    }

    @FunctionalInterface
    interface Read<V> {
        V read(JsonParser in) throws IOException;
    }

    /** Refuses a value that does not start with {@code token}. */
    static void require(JsonParser in, JsonToken token) {
        if (in.currentToken() != token) {
            throw new InvalidField();
        }
    }
}
